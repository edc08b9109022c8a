package io.flix.index.gpu;

import io.flix.index.GpuMemoryBudget;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;

/**
 * The device memory that the GPU indexes of this process hold on one device (one ledger a device, kept by
 * {@link GpuRuntime}), and the budgets it is held to. Every device allocation is reserved here before the device
 * is asked and released when freed, through an {@link Account} of the index that allocates; a reservation that
 * would take the bytes in use past the account's budget is refused with a
 * {@link DeviceMemoryBudgetExceededException}, and nothing is reserved. Reservations from several threads (the
 * indexes of several subtasks on one device) are atomic: no interleaving lets the bytes in use pass the budget of
 * an account that reserved them. Plain Java, so that it is tested without a device.
 *
 * <p>Memory that a closed index frees is kept here for the next index's allocations, up to {@code keepLimit}
 * bytes ({@link #keep}, {@link Account#take}): an index opened where another closed (a restore after a failure, a
 * rescale, a rebuilt dimension) then asks the device for nothing, and a close does not wait for the whole device
 * as a free does. Kept bytes count towards every budget as the indexes' own do, so a budget bounds what the process
 * holds; a reservation that would pass a budget, or an allocation that the device refuses, frees kept memory first
 * (oldest first).
 *
 * <p>An open index's small blocks that it drops (the arrays of an empty layout that its first build replaces, a
 * scratch buffer outgrown) are put off until it closes ({@link Account#putOff}): freeing memory while the index is
 * open waits for the whole device, and a layout drops several small arrays at once.
 */
final class DeviceMemoryLedger {

    private final String device;
    private final long deviceBytes;
    private final long keepLimit;
    /** Bytes the indexes hold. Guarded by this. */
    private long held;
    /** Bytes of the kept blocks. Guarded by this. */
    private long kept;
    /** Kept blocks, the oldest first. Guarded by this. */
    private final ArrayDeque<KeptBlock> keptBlocks = new ArrayDeque<>();

    /**
     * Device memory kept for reuse: what it can serve ({@code kind}: plain allocations, or mappings of one size of
     * address range), its bytes, the memory itself ({@code memory}, for the buffer that takes it) and how to give it
     * back to the device ({@code free}, run with the device's context current).
     */
    record KeptBlock(String kind, long bytes, Object memory, Runnable free) {
    }

    /**
     * A ledger that keeps no freed memory.
     *
     * @param device      the device, for messages (e.g. "device 0 (NVIDIA H200)")
     * @param deviceBytes the device's memory, which a budget's fraction is of
     */
    DeviceMemoryLedger(String device, long deviceBytes) {
        this(device, deviceBytes, 0);
    }

    /** A ledger that keeps up to {@code keepLimit} bytes that closed indexes freed. */
    DeviceMemoryLedger(String device, long deviceBytes, long keepLimit) {
        if (keepLimit < 0) {
            throw new IllegalArgumentException("the bytes kept for reuse must be >= 0, was " + keepLimit);
        }
        this.device = device;
        this.deviceBytes = deviceBytes;
        this.keepLimit = keepLimit;
    }

    /** An account that reserves in this ledger within {@code budget}. */
    Account account(GpuMemoryBudget budget) {
        return new Account(budget, budget.limitOn(deviceBytes), false);
    }

    /**
     * An index's account, which it {@linkplain Account#end ends} when it closes: it may put off the release of the
     * small blocks it drops until then ({@link Account#putOff}).
     */
    Account indexAccount(GpuMemoryBudget budget) {
        return new Account(budget, budget.limitOn(deviceBytes), true);
    }

    /** Bytes the indexes hold: reserved and not released, the kept bytes not counted. */
    synchronized long bytesInUse() {
        return held;
    }

    /** Bytes that closed indexes freed and that are kept for reuse. */
    synchronized long bytesKept() {
        return kept;
    }

    /** The most bytes kept for reuse. */
    long keepLimit() {
        return keepLimit;
    }

    /**
     * Reserves {@code bytes} where the bytes in use and kept stay within {@code limit}, freeing kept memory first
     * where they would not; returns the bytes in use after.
     *
     * @throws DeviceMemoryBudgetExceededException where the indexes' own bytes leave no room; nothing is reserved
     */
    private synchronized long reserve(long bytes, long limit, GpuMemoryBudget budget, String what) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes to reserve must be >= 0, was " + bytes);
        }
        if (bytes > limit - held - kept) {
            freeKept(held + kept + bytes - limit);
        }
        if (bytes > limit - held - kept) {
            throw exceeded(bytes, held + kept, limit, budget, what);
        }
        held += bytes;
        return held;
    }

    /** Releases {@code bytes} reserved earlier; returns the bytes in use after. */
    private synchronized long release(long bytes) {
        if (bytes < 0 || bytes > held) {
            throw new IllegalStateException("releasing " + bytes + " bytes of " + device + ", which has " + held
                    + " reserved");
        }
        held -= bytes;
        return held;
    }

    /**
     * Keeps {@code block}, memory an ended account reserved and no device work can reach any more, for reuse: its
     * bytes move from the indexes' to the kept, the oldest kept blocks freed where the keep limit needs it.
     * Returns false where the block alone passes the limit: nothing changes, and the caller frees it.
     */
    private synchronized boolean keep(KeptBlock block) {
        if (block.bytes() > keepLimit || block.bytes() > held) {
            return false;
        }
        freeKept(kept + block.bytes() - keepLimit);
        keptBlocks.addLast(block);
        held -= block.bytes();
        kept += block.bytes();
        return true;
    }

    /**
     * The smallest kept block of {@code kind} with {@code atLeast} to {@code atMost} bytes, its bytes moved from the
     * kept to the indexes' within {@code limit} (other kept blocks freed where the limit needs it); null where none
     * fits.
     */
    private synchronized KeptBlock take(String kind, long atLeast, long atMost, long limit) {
        KeptBlock best = null;
        for (KeptBlock b : keptBlocks) {
            if (b.kind().equals(kind) && b.bytes() >= atLeast && b.bytes() <= atMost
                    && (best == null || b.bytes() < best.bytes())) {
                best = b;
            }
        }
        if (best == null || best.bytes() > limit - held) {
            // where the block itself does not fit the budget, the caller's reservation refuses
            return null;
        }
        keptBlocks.remove(best);
        kept -= best.bytes();
        held += best.bytes();
        freeKept(held + kept - limit);
        return best;
    }

    /** Frees every kept block (a device that ran out of memory); returns the bytes freed. */
    synchronized long freeAllKept() {
        final long before = kept;
        freeKept(kept);
        return before;
    }

    /** Frees kept blocks, the oldest first, until {@code bytes} are freed or none is left. */
    private void freeKept(long bytes) {
        long freed = 0;
        final Iterator<KeptBlock> oldestFirst = keptBlocks.iterator();
        while (freed < bytes && oldestFirst.hasNext()) {
            final KeptBlock b = oldestFirst.next();
            oldestFirst.remove();
            kept -= b.bytes();
            freed += b.bytes();
            b.free().run();
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

    /** The most bytes an open account puts off freeing ({@link Account#putOff}). */
    static final long PUT_OFF_LIMIT = 4L << 20;

    /** One index's (or one caller's) way into the ledger, held to its budget. */
    final class Account {
        private final GpuMemoryBudget budget;
        private final long limit;
        private final boolean endedByItsIndex;
        private volatile boolean ended;
        /** The releases of the blocks put off, and their bytes. Guarded by this account. */
        private final List<Runnable> putOff = new ArrayList<>();
        private long putOffBytes;

        private Account(GpuMemoryBudget budget, long limit, boolean endedByItsIndex) {
            this.budget = budget;
            this.limit = limit;
            this.endedByItsIndex = endedByItsIndex;
        }

        /**
         * Reserves {@code bytes} for {@code what} (named in the refusal); returns the ledger's bytes in use after.
         *
         * @throws DeviceMemoryBudgetExceededException where the bytes in use would pass this account's budget
         */
        long reserve(long bytes, String what) {
            try {
                return DeviceMemoryLedger.this.reserve(bytes, limit, budget, what);
            } catch (DeviceMemoryBudgetExceededException e) {
                if (releasePutOff() == 0) {
                    throw e;
                }
                return DeviceMemoryLedger.this.reserve(bytes, limit, budget, what);
            }
        }

        /** Releases {@code bytes} this account reserved; returns the ledger's bytes in use after. */
        long release(long bytes) {
            return DeviceMemoryLedger.this.release(bytes);
        }

        /**
         * Says that the account's index has closed and that no device work can reach its memory any more: what it
         * frees from now on may be kept for reuse ({@link #keep}).
         */
        void end() {
            ended = true;
            releasePutOff();
        }

        /**
         * Puts off the release of a block of {@code bytes} that this open account reserved and its index dropped,
         * until the account ends (its memory then kept for the next index) or needs room; the block stays reserved
         * meanwhile, and no device work reaches it before it is released. False where the account is not an index's
         * ({@link #indexAccount}), has ended or has put off {@link #PUT_OFF_LIMIT} bytes: the caller releases it now.
         */
        synchronized boolean putOff(long bytes, Runnable release) {
            if (!endedByItsIndex || ended || bytes < 0 || putOffBytes + bytes > PUT_OFF_LIMIT) {
                return false;
            }
            putOff.add(release);
            putOffBytes += bytes;
            return true;
        }

        /** Bytes put off and not yet released. */
        synchronized long bytesPutOff() {
            return putOffBytes;
        }

        /**
         * Runs the releases put off (each frees its block, or keeps it where the account has ended); returns their
         * bytes. A reservation past the budget, and an allocation the device refuses, run them first.
         */
        long releasePutOff() {
            final List<Runnable> releases;
            final long bytes;
            synchronized (this) {
                releases = List.copyOf(putOff);
                bytes = putOffBytes;
                putOff.clear();
                putOffBytes = 0;
            }
            releases.forEach(Runnable::run);
            return bytes;
        }

        boolean ended() {
            return ended;
        }

        /**
         * Keeps {@code block}, which this ended account reserved, for reuse (its bytes released from this
         * account); false where it is not kept (the account has not ended, or the block passes the keep limit):
         * nothing changes, and the caller frees it.
         */
        boolean keep(KeptBlock block) {
            return ended && DeviceMemoryLedger.this.keep(block);
        }

        /**
         * A kept block of {@code kind} with {@code atLeast} to {@code atMost} bytes, reserved for this account
         * within its budget; null where none fits.
         */
        KeptBlock take(String kind, long atLeast, long atMost) {
            return DeviceMemoryLedger.this.take(kind, atLeast, atMost, limit);
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
