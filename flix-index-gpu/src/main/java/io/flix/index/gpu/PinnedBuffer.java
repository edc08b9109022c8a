package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuMemAllocHost;
import static jcuda.driver.JCudaDriver.cuMemFreeHost;

import java.nio.ByteOrder;
import java.nio.LongBuffer;

import jcuda.Pointer;

/**
 * Page-locked host memory for staging copies (about three times the bandwidth of copies from a Java array). It
 * grows on demand and is reused across batches.
 */
final class PinnedBuffer implements AutoCloseable {

    private Pointer pointer;
    private long bytes;
    private LongBuffer longs;

    /** Makes room for {@code count} longs; the contents are not kept. */
    void ensureLongs(long count) {
        final long need = Math.max(8, count * Long.BYTES);
        if (need <= bytes) {
            return;
        }
        final long grown = Math.max(need, Math.min(bytes + bytes / 2, Integer.MAX_VALUE & ~7L));
        free();
        final Pointer p = new Pointer();
        cuMemAllocHost(p, grown);
        pointer = p;
        bytes = grown;
        longs = p.getByteBuffer(0, grown).order(ByteOrder.nativeOrder()).asLongBuffer();
    }

    Pointer pointer(long byteOffset) {
        return pointer.withByteOffset(byteOffset);
    }

    /** A view of the buffer as longs, indexed from its start. */
    LongBuffer longs() {
        return longs;
    }

    private void free() {
        if (pointer != null) {
            cuMemFreeHost(pointer);
            pointer = null;
            bytes = 0;
            longs = null;
        }
    }

    @Override
    public void close() {
        free();
    }
}
