package io.flix.index.gpu;

import jcuda.driver.CUdeviceptr;

/** A device buffer that grows on demand (by half again at least) and keeps its memory between batches. */
final class Scratch implements AutoCloseable {
    private final DeviceMemoryLedger.Account memory;
    private final String what;
    private DeviceBuffer buffer;

    /** @param memory where its memory is reserved (the index's account) */
    Scratch(DeviceMemoryLedger.Account memory, String what) {
        this.memory = memory;
        this.what = what;
    }

    DeviceBuffer ensure(long bytes) {
        if (buffer == null || buffer.bytes() < bytes) {
            final long grown = buffer == null ? bytes : Math.max(bytes, buffer.bytes() + buffer.bytes() / 2);
            final DeviceBuffer fresh = DeviceBuffer.allocate(memory, grown, what);
            if (buffer != null) {
                buffer.close();
            }
            buffer = fresh;
        }
        return buffer;
    }

    DeviceBuffer buffer() {
        return buffer;
    }

    CUdeviceptr pointer() {
        return buffer.pointer();
    }

    /**
     * Takes {@code replacement} as this scratch's buffer and returns the one held: double buffering, where the
     * caller has written its new contents into this scratch.
     */
    DeviceBuffer swap(DeviceBuffer replacement) {
        final DeviceBuffer held = buffer;
        buffer = replacement;
        return held;
    }

    /** Bytes held (0 before the first use). */
    long bytes() {
        return buffer == null ? 0 : buffer.bytes();
    }

    @Override
    public void close() {
        if (buffer != null) {
            buffer.close();
            buffer = null;
        }
    }
}
