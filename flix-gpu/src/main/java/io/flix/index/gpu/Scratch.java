package io.flix.index.gpu;

import jcuda.driver.CUdeviceptr;

/** A device buffer that grows on demand (by half again at least) and keeps its memory between batches. */
final class Scratch implements AutoCloseable {
    private final String what;
    private DeviceBuffer buffer;

    Scratch(String what) {
        this.what = what;
    }

    DeviceBuffer ensure(long bytes) {
        if (buffer == null || buffer.bytes() < bytes) {
            final long grown = buffer == null ? bytes : Math.max(bytes, buffer.bytes() + buffer.bytes() / 2);
            final DeviceBuffer fresh = DeviceBuffer.allocate(grown, what);
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
