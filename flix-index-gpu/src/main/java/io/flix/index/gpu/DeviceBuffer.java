package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUresult;
import jcuda.CudaException;

/**
 * One device allocation and its size, freed by {@link #close()}. Live allocations are counted process-wide so
 * that tests can assert every index returned its memory ({@link #liveBytes()}, {@link #liveAllocations()}).
 *
 * <p>A buffer made by {@link #reserve} grows in place ({@link #growTo}): it reserves an address range and maps
 * physical memory into it chunk by chunk, so growing neither copies the contents nor needs the old and the new
 * size at once, and its address stays the same.
 *
 * <p>Every byte is reserved in the device's {@link DeviceMemoryLedger} through the allocating index's account
 * before the device is asked, and released when freed: an allocation past the index's GPU memory budget is refused
 * ({@link DeviceMemoryBudgetExceededException}) without a call to the device.
 */
public final class DeviceBuffer implements AutoCloseable {

    private static final AtomicLong LIVE_BYTES = new AtomicLong();
    private static final AtomicLong LIVE_ALLOCATIONS = new AtomicLong();
    /** The kind of kept memory that plain allocations take. */
    private static final String PLAIN = "plain";
    /** A kept plain block serves a request of up to this fraction less ({@code 1 / KEPT_SLACK}) than its size. */
    private static final int KEPT_SLACK = 4;

    private final RawDevicePointer pointer;
    /** Where this buffer's bytes are reserved. */
    private final DeviceMemoryLedger.Account account;
    private long bytes;
    /** Bytes held past {@link #bytes}: a kept block taken for a smaller request (plain allocations only). */
    private final long slack;
    /** The reserved range and its mapped chunks; null for one plain allocation. */
    private final Mapping mapping;
    /** Whether this buffer is a view of another's memory ({@link #view}): closing it frees nothing. */
    private boolean view;
    private boolean closed;

    private DeviceBuffer(RawDevicePointer pointer, DeviceMemoryLedger.Account account, long bytes, long slack,
                         Mapping mapping) {
        this.pointer = pointer;
        this.account = account;
        this.bytes = bytes;
        this.slack = slack;
        this.mapping = mapping;
    }

    private static final class Mapping {
        final int ordinal;
        final long start;
        final long granularity;
        final long reserved;
        final List<Long> chunks = new ArrayList<>();
        final List<Long> chunkBytes = new ArrayList<>();

        Mapping(int ordinal, long start, long granularity, long reserved) {
            this.ordinal = ordinal;
            this.start = start;
            this.granularity = granularity;
            this.reserved = reserved;
        }

        /** Unmaps the last chunk, which ends at address {@code end}; returns its bytes. */
        long unmapLast(long end) {
            final int last = chunks.size() - 1;
            final long size = chunkBytes.remove(last);
            DeviceMemoryNative.check(DeviceMemoryNative.unmap(end - size, size, chunks.remove(last)), "unmapping");
            return size;
        }

        /** Unmaps every chunk, the last first, and frees the addresses; nothing in flight may reach them. */
        void release() {
            long end = start;
            for (long size : chunkBytes) {
                end += size;
            }
            while (!chunks.isEmpty()) {
                end -= unmapLast(end);
            }
            DeviceMemoryNative.check(DeviceMemoryNative.unreserve(start, reserved), "freeing addresses");
        }
    }

    /**
     * Allocates {@code bytes} (at least 8) of device memory on the current context (the account's device), reserved
     * in {@code account} first.
     *
     * @throws DeviceMemoryBudgetExceededException where the account's budget refuses it (the device is not asked)
     * @throws GpuOutOfMemoryException naming the request and the device's free and total memory
     */
    static DeviceBuffer allocate(DeviceMemoryLedger.Account account, long bytes, String what) {
        final long size = Math.max(8, (bytes + 7) & ~7L);
        final DeviceMemoryLedger.KeptBlock kept = account.take(PLAIN, size, size + size / KEPT_SLACK);
        if (kept != null) {
            LIVE_BYTES.addAndGet(kept.bytes());
            LIVE_ALLOCATIONS.incrementAndGet();
            return new DeviceBuffer((RawDevicePointer) kept.memory(), account, size, kept.bytes() - size, null);
        }
        account.reserve(size, what);
        final RawDevicePointer p = new RawDevicePointer();
        try {
            try {
                cuMemAlloc(p, size);
            } catch (CudaException e) {
                if (!isOutOfMemory(e) || account.releasePutOff() + account.ledger().freeAllKept() == 0) {
                    throw e;
                }
                cuMemAlloc(p, size);
            }
        } catch (CudaException e) {
            account.release(size);
            throw outOfMemoryOr(e, size, what);
        } catch (RuntimeException e) {
            account.release(size);
            throw e;
        }
        LIVE_BYTES.addAndGet(size);
        LIVE_ALLOCATIONS.incrementAndGet();
        return new DeviceBuffer(p, account, size, 0, null);
    }

    /**
     * Allocates {@code count} buffers, {@code allocate.apply(i)} the i-th, all or none: where one fails, those
     * allocated before it are freed and the exception propagates.
     */
    static DeviceBuffer[] allocateAll(int count, IntFunction<DeviceBuffer> allocate) {
        final DeviceBuffer[] buffers = new DeviceBuffer[count];
        try {
            for (int i = 0; i < count; i++) {
                buffers[i] = allocate.apply(i);
            }
        } catch (RuntimeException e) {
            for (DeviceBuffer b : buffers) {
                if (b != null) {
                    b.close();
                }
            }
            throw e;
        }
        return buffers;
    }

    /**
     * Reserves {@code reservedBytes} of addresses on device {@code ordinal} (the current context's) and maps
     * {@code bytes} of memory at their start: a buffer that {@link #growTo grows in place} up to the reservation.
     * Needs the device's virtual memory management (GpuRuntime says whether it has it). Only the mapped memory is
     * reserved in {@code account}, not the addresses.
     *
     * @throws GpuOutOfMemoryException as {@link #allocate}
     */
    static DeviceBuffer reserve(DeviceMemoryLedger.Account account, int ordinal, long reservedBytes, long bytes,
                                String what) {
        final long[] out = new long[1];
        DeviceMemoryNative.check(DeviceMemoryNative.granularity(ordinal, out), "mapping granularity");
        final long granularity = out[0];
        final long reserved = roundUp(Math.max(reservedBytes, bytes), granularity);
        final String kind = mappedKind(ordinal, reserved, granularity);
        // a kept mapping of up to twice the bytes asked (the pool grows into it), else a smaller one grown
        DeviceMemoryLedger.KeptBlock kept = account.take(kind, bytes, 2 * bytes + granularity);
        if (kept == null) {
            kept = account.take(kind, 0, bytes);
        }
        if (kept != null) {
            final Mapping mapping = (Mapping) kept.memory();
            LIVE_ALLOCATIONS.incrementAndGet();
            LIVE_BYTES.addAndGet(kept.bytes());
            final DeviceBuffer buffer = new DeviceBuffer(new RawDevicePointer(mapping.start), account, kept.bytes(), 0,
                    mapping);
            try {
                buffer.unmapBeyond(bytes); // kept memory: nothing in flight reaches it
                buffer.growTo(bytes, what);
            } catch (RuntimeException e) {
                buffer.close();
                throw e;
            }
            return buffer;
        }
        DeviceMemoryNative.check(DeviceMemoryNative.reserve(reserved, out), "reserving " + reserved
                + " bytes of addresses for " + what);
        final RawDevicePointer p = new RawDevicePointer(out[0]);
        LIVE_ALLOCATIONS.incrementAndGet();
        final DeviceBuffer buffer = new DeviceBuffer(p, account, 0, 0,
                new Mapping(ordinal, out[0], granularity, reserved));
        try {
            buffer.growTo(bytes, what);
        } catch (RuntimeException e) {
            buffer.close();
            throw e;
        }
        return buffer;
    }

    /**
     * A buffer over {@code bytes} of this one's memory from {@code byteOffset} (a chunk of a batch), owning nothing:
     * valid while this one is, and its close frees nothing.
     */
    DeviceBuffer view(long byteOffset, long bytes) {
        if (byteOffset < 0 || bytes < 0 || byteOffset + bytes > this.bytes) {
            throw new IllegalArgumentException("a view of " + bytes + " bytes at " + byteOffset + " passes the end of "
                    + this.bytes + " bytes");
        }
        final DeviceBuffer v = new DeviceBuffer(new RawDevicePointer(address() + byteOffset), null, bytes, 0, null);
        v.view = true;
        return v;
    }

    /** Whether this buffer grows in place. */
    boolean growsInPlace() {
        return mapping != null;
    }

    /**
     * Maps memory until at least {@code newBytes} are usable; the contents and the address stay. For buffers made
     * by {@link #reserve} only.
     *
     * @throws GpuOutOfMemoryException where the device has not the memory, or the reservation is smaller
     */
    void growTo(long newBytes, String what) {
        pointer();
        if (mapping == null) {
            throw new IllegalStateException(what + ": a plain allocation does not grow in place");
        }
        if (newBytes <= bytes) {
            return;
        }
        final long size = roundUp(newBytes - bytes, mapping.granularity);
        if (bytes + size > mapping.reserved) {
            throw new GpuOutOfMemoryException("GPU buffer for " + what + " cannot grow to " + newBytes
                    + " bytes: its address range holds " + mapping.reserved, null);
        }
        account.reserve(size, what);
        final long[] chunk = new long[1];
        try {
            int code = DeviceMemoryNative.map(mapping.start + bytes, size, mapping.ordinal, chunk);
            if (code == DeviceMemoryNative.OUT_OF_MEMORY
                    && account.releasePutOff() + account.ledger().freeAllKept() > 0) {
                code = DeviceMemoryNative.map(mapping.start + bytes, size, mapping.ordinal, chunk);
            }
            if (code == DeviceMemoryNative.OUT_OF_MEMORY) {
                throw outOfMemory(size, what, null);
            }
            DeviceMemoryNative.check(code, "mapping " + size + " bytes for " + what);
        } catch (RuntimeException e) {
            account.release(size);
            throw e;
        }
        mapping.chunks.add(chunk[0]);
        mapping.chunkBytes.add(size);
        bytes += size;
        LIVE_BYTES.addAndGet(size);
    }

    /** Unmaps the chunks mapped after the first {@code keepBytes} (undoes a {@link #growTo} that was not used). */
    void shrinkTo(long keepBytes) {
        if (mapping != null) {
            cuCtxSynchronize(); // see unmapLast
            unmapBeyond(keepBytes);
        }
    }

    /** Unmaps the last chunks while the first {@code keepBytes} stay mapped; the caller has synchronised. */
    private void unmapBeyond(long keepBytes) {
        while (!mapping.chunks.isEmpty()) {
            final int last = mapping.chunks.size() - 1;
            if (bytes - mapping.chunkBytes.get(last) < keepBytes) {
                return;
            }
            unmapLast();
        }
    }

    /**
     * Unmaps the last chunk. Unlike cuMemFree, unmapping does not wait for the work in flight: callers synchronise
     * first, or a kernel still reading the chunk faults (CUDA_ERROR_ILLEGAL_ADDRESS).
     */
    private void unmapLast() {
        final long size = mapping.unmapLast(mapping.start + bytes);
        bytes -= size;
        LIVE_BYTES.addAndGet(-size);
        account.release(size);
    }

    private static long roundUp(long bytes, long granularity) {
        return (bytes + granularity - 1) / granularity * granularity;
    }

    /** A GpuOutOfMemoryException naming the request and the device's memory where e says out of memory; else e. */
    private static RuntimeException outOfMemoryOr(CudaException e, long size, String what) {
        return isOutOfMemory(e) ? outOfMemory(size, what, e) : e;
    }

    private static boolean isOutOfMemory(CudaException e) {
        return e.getMessage() != null
                && e.getMessage().contains(CUresult.stringFor(CUresult.CUDA_ERROR_OUT_OF_MEMORY));
    }

    /** The kind of kept memory a mapping serves: one device, one size of address range, one granularity. */
    private static String mappedKind(int ordinal, long reserved, long granularity) {
        return "mapped on device " + ordinal + ", " + reserved + " bytes of addresses in chunks of " + granularity;
    }

    private static GpuOutOfMemoryException outOfMemory(long size, String what, Throwable cause) {
        final long[] free = new long[1];
        final long[] total = new long[1];
        try {
            cuMemGetInfo(free, total);
        } catch (CudaException ignored) {
            // report what we know
        }
        return new GpuOutOfMemoryException("GPU out of memory allocating " + size + " bytes for " + what
                + " (device free " + free[0] + " of " + total[0] + " bytes; this process holds "
                + LIVE_BYTES.get() + " bytes in " + LIVE_ALLOCATIONS.get() + " allocations)", cause);
    }

    CUdeviceptr pointer() {
        if (closed) {
            throw new IllegalStateException("device buffer used after close");
        }
        return pointer;
    }

    /** The buffer's pointer, or null for no buffer (a kernel's optional array). */
    static CUdeviceptr pointerOf(DeviceBuffer buffer) {
        return buffer == null ? null : buffer.pointer();
    }

    /** The pointer {@code byteOffset} bytes in. */
    CUdeviceptr at(long byteOffset) {
        return new RawDevicePointer(address() + byteOffset);
    }

    /** The raw device address of a buffer's pointer ({@link #pointer()}, {@link #at}), for native code. */
    static long addressOf(CUdeviceptr pointer) {
        if (pointer instanceof RawDevicePointer raw) {
            return raw.address();
        }
        throw new IllegalArgumentException("not a device buffer's pointer: " + pointer);
    }

    /** The raw device address, for the CUB bridge. */
    long address() {
        pointer();
        return pointer.address();
    }

    long bytes() {
        return bytes;
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public void close() {
        close(null);
    }

    /**
     * Closes this buffer once the work queued on {@code stream} is done with it: at once where its release is put
     * off (its memory stays reserved until its index closes), else after waiting for that work.
     */
    void closeAfter(DeviceStream stream) {
        close(stream);
    }

    /** Closes once: a view frees nothing; else the release is put off, or made after waiting for {@code work}. */
    private void close(DeviceStream work) {
        if (closed) {
            return;
        }
        closed = true;
        if (!view && !putOff()) {
            if (work != null) {
                work.synchronize();
            }
            release();
        }
    }

    /** Puts off the release of a small plain buffer that an open index dropped ({@link DeviceMemoryLedger}). */
    private boolean putOff() {
        return mapping == null && !account.ended() && account.putOff(bytes + slack, this::release);
    }

    /** Gives the memory back: kept for the next index where the account has ended, else freed. */
    private void release() {
        if (account.keep(kept())) {
            // its index has ended: the next index's allocation takes it
            LIVE_BYTES.addAndGet(-(bytes + slack));
        } else if (mapping == null) {
            cuMemFree(pointer);
            LIVE_BYTES.addAndGet(-(bytes + slack));
            account.release(bytes + slack);
        } else {
            cuCtxSynchronize(); // see unmapLast
            mapping.release();
            LIVE_BYTES.addAndGet(-bytes);
            account.release(bytes);
        }
        LIVE_ALLOCATIONS.decrementAndGet();
    }

    /** This buffer's memory as a block to keep for reuse, and how to give it back to the device. */
    private DeviceMemoryLedger.KeptBlock kept() {
        if (mapping == null) {
            final RawDevicePointer p = pointer;
            return new DeviceMemoryLedger.KeptBlock(PLAIN, bytes + slack, p, () -> cuMemFree(p));
        }
        final Mapping m = mapping;
        return new DeviceMemoryLedger.KeptBlock(mappedKind(m.ordinal, m.reserved, m.granularity), bytes, m,
                m::release);
    }

    /** Device bytes currently allocated through this class, by every index in the process. */
    public static long liveBytes() {
        return LIVE_BYTES.get();
    }

    /** Device allocations currently live, by every index in the process. */
    public static long liveAllocations() {
        return LIVE_ALLOCATIONS.get();
    }

    /** A device pointer whose raw address can be read, to hand to native code. */
    static final class RawDevicePointer extends CUdeviceptr {
        RawDevicePointer() {
        }

        /** A pointer to an address that native code returned. */
        RawDevicePointer(long address) {
            super(new CUdeviceptr(), address);
        }

        long address() {
            return getNativePointer() + getByteOffset();
        }
    }
}
