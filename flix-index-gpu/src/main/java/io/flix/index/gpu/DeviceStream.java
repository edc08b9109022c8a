package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;
import static jcuda.driver.JCudaDriver.cuMemsetD32Async;
import static jcuda.driver.JCudaDriver.cuStreamCreate;
import static jcuda.driver.JCudaDriver.cuStreamDestroy;
import static jcuda.driver.JCudaDriver.cuStreamSynchronize;
import static jcuda.driver.JCudaDriver.cuStreamWaitEvent;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;
import jcuda.driver.CUstream;
import jcuda.driver.CUstream_flags;

/**
 * A CUDA stream of one index (non-blocking: it neither waits for nor holds up the legacy default stream or another
 * index's streams, so indexes sharing a device overlap), with the small ordered operations the device work needs:
 * fills, device copies, and host reads and writes of a few values through a pinned scratch area. Every operation is
 * queued after the work issued before on this stream; reads return once their values have arrived. Create, use and
 * close with the device's context current.
 */
final class DeviceStream implements AutoCloseable {

    /** Longs of the pinned areas for small reads and writes. */
    private static final int SMALL_LONGS = 64;

    private final RawStream stream = new RawStream();
    private final PinnedBuffer readArea = new PinnedBuffer();
    private final PinnedBuffer writeArea = new PinnedBuffer();
    /** Recorded after each small write: the write area may be refilled once it has passed. */
    private final CUevent writeAreaFree = new CUevent();
    private boolean open;

    DeviceStream() {
        cuStreamCreate(stream, CUstream_flags.CU_STREAM_NON_BLOCKING);
        try {
            cuEventCreate(writeAreaFree, CUevent_flags.CU_EVENT_DISABLE_TIMING);
            readArea.ensureLongs(SMALL_LONGS);
            writeArea.ensureLongs(SMALL_LONGS);
        } catch (RuntimeException e) {
            readArea.close();
            writeArea.close();
            cuStreamDestroy(stream);
            throw e;
        }
        open = true;
    }

    /** The stream for driver calls. */
    CUstream stream() {
        return stream;
    }

    /** The stream's handle for native code (the CUB bridge). */
    long address() {
        return stream.address();
    }

    /** Waits until the work issued on this stream is done. */
    void synchronize() {
        cuStreamSynchronize(stream);
    }

    /** Work issued on this stream from now on waits for {@code event} (recorded on another stream). */
    void waitFor(CUevent event) {
        cuStreamWaitEvent(stream, event, 0);
    }

    /** Sets {@code count} 32-bit words from {@code at} to {@code value}. */
    void fillInts(CUdeviceptr at, int value, long count) {
        cuMemsetD32Async(at, value, count, stream);
    }

    void copy(CUdeviceptr dst, CUdeviceptr src, long bytes) {
        cuMemcpyDtoDAsync(dst, src, bytes, stream);
    }

    /** Writes {@code values} (at most 64) to {@code dst}, after the work issued before. */
    void write(CUdeviceptr dst, long... values) {
        checkSmall(values.length);
        cuEventSynchronize(writeAreaFree);
        writeArea.longs().put(0, values);
        cuMemcpyHtoDAsync(dst, writeArea.pointer(0), values.length * (long) Long.BYTES, stream);
        cuEventRecord(writeAreaFree, stream);
    }

    /** Reads {@code count} longs (at most 64) from {@code src} into {@code out}, after the work issued before. */
    void read(CUdeviceptr src, long[] out, int count) {
        checkSmall(count);
        cuMemcpyDtoHAsync(readArea.pointer(0), src, count * (long) Long.BYTES, stream);
        cuStreamSynchronize(stream);
        readArea.longs().get(0, out, 0, count);
    }

    /** Reads one 32-bit int from {@code src}, after the work issued before. */
    int readInt(CUdeviceptr src) {
        cuMemcpyDtoHAsync(readArea.pointer(0), src, Integer.BYTES, stream);
        cuStreamSynchronize(stream);
        return (int) readArea.longs().get(0); // the int's bytes are the low half of a little-endian long
    }

    private static void checkSmall(int count) {
        if (count > SMALL_LONGS) {
            throw new IllegalArgumentException(count + " longs exceed a small transfer of " + SMALL_LONGS);
        }
    }

    @Override
    public void close() {
        if (!open) {
            return;
        }
        open = false;
        cuStreamSynchronize(stream);
        cuEventDestroy(writeAreaFree);
        cuStreamDestroy(stream);
        readArea.close();
        writeArea.close();
    }

    /** A stream whose raw handle can be read, to hand to native code. */
    private static final class RawStream extends CUstream {
        long address() {
            return getNativePointer();
        }
    }
}
