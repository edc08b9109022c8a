package io.flix.index.gpu;

import io.flix.index.GpuMemoryBudget;

import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The device memory that the GPU indexes of this process hold on one device (one ledger a device, kept by
 * {@link GpuRuntime}), and the budgets it is held to. Every device allocation is reserved here before the device
 * is asked and released when freed, through an {@link Account} of the index that allocates; a reservation that
 * would take the bytes in use past the account's budget is refused with a
 * {@link DeviceMemoryBudgetExceededException}, and nothing is reserved. Reservations from several threads (the
 * indexes of several subtasks on one device) are atomic: no interleaving lets the bytes in use pass the budget of
 * an account that reserved them. Plain Java, so that it is tested without a device.
 */
final class DeviceMemoryLedger {

    private final String device;
    private final long deviceBytes;
    private final AtomicLong inUse = new AtomicLong();

    /**
     * @param device      the device, for messages (e.g. "device 0 (NVIDIA H200)")
     * @param deviceBytes the device's memory, which a budget's fraction is of
     */
    DeviceMemoryLedger(String device, long deviceBytes) {
        this.device = device;
        this.deviceBytes = deviceBytes;
    }

    /** An account that reserves in this ledger within {@code budget}. */
    Account account(GpuMemoryBudget budget) {
        return new Account(budget, budget.limitOn(deviceBytes));
    }

    /** Bytes reserved and not released. */
    long bytesInUse() {
        return inUse.get();
    }

    /**
     * Reserves {@code bytes} where the bytes in use stay within {@code limit}; returns the bytes in use after.
     *
     * @throws DeviceMemoryBudgetExceededException where they would not; nothing is reserved
     */
    private long reserve(long bytes, long limit, GpuMemoryBudget budget, String what) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes to reserve must be >= 0, was " + bytes);
        }
        while (true) {
            final long held = inUse.get();
            if (bytes > limit - held) {
                throw exceeded(bytes, held, limit, budget, what);
            }
            if (inUse.compareAndSet(held, held + bytes)) {
                return held + bytes;
            }
        }
    }

    /** Releases {@code bytes} reserved earlier; returns the bytes in use after. */
    private long release(long bytes) {
        while (true) {
            final long held = inUse.get();
            if (bytes < 0 || bytes > held) {
                throw new IllegalStateException("releasing " + bytes + " bytes of " + device + ", which has "
                        + held + " reserved");
            }
            if (inUse.compareAndSet(held, held - bytes)) {
                return held - bytes;
            }
        }
    }

    private DeviceMemoryBudgetExceededException exceeded(long bytes, long held, long limit, GpuMemoryBudget budget,
                                                         String what) {
        final String message = "GPU memory budget exceeded on " + device + ": " + what + " asks for " + bytes
                + " bytes (" + size(bytes) + ") while the GPU indexes of this process hold " + held + " bytes ("
                + size(held) + ") on the device, and the budget is " + budget + " = " + limit + " bytes ("
                + size(limit) + "). The allocation was not made and the index is unchanged. To go on: raise the budget "
                + "(FlixConfig.gpuMemoryBudget, the operator's gpuMemoryBudget, the SQL option "
                + "'index.gpu-memory-budget'), spread the dimension over more task managers (the keyed mode "
                + "holds a slice of it per subtask, the shared mode and the SQL connector all of it per task "
                + "manager), or use the CPU backend.";
        return new DeviceMemoryBudgetExceededException(message, limit, held, bytes);
    }

    /** Bytes as a user reads them: 1.5 GiB, 312.0 MiB, 12 bytes. */
    static String size(long bytes) {
        if (bytes >= 1L << 30) {
            return String.format(Locale.ROOT, "%.1f GiB", bytes / (double) (1L << 30));
        }
        if (bytes >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1L << 20));
        }
        return bytes + " bytes";
    }

    /** One index's (or one caller's) way into the ledger, held to its budget. */
    final class Account {
        private final GpuMemoryBudget budget;
        private final long limit;

        private Account(GpuMemoryBudget budget, long limit) {
            this.budget = budget;
            this.limit = limit;
        }

        /**
         * Reserves {@code bytes} for {@code what} (named in the refusal); returns the ledger's bytes in use after.
         *
         * @throws DeviceMemoryBudgetExceededException where the bytes in use would pass this account's budget
         */
        long reserve(long bytes, String what) {
            return DeviceMemoryLedger.this.reserve(bytes, limit, budget, what);
        }

        /** Releases {@code bytes} this account reserved; returns the ledger's bytes in use after. */
        long release(long bytes) {
            return DeviceMemoryLedger.this.release(bytes);
        }

        /** The budget in bytes (Long.MAX_VALUE for none). */
        long limit() {
            return limit;
        }

        DeviceMemoryLedger ledger() {
            return DeviceMemoryLedger.this;
        }
    }
}
