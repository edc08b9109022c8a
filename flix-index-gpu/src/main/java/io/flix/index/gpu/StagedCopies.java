package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;

import java.nio.LongBuffer;
import java.util.stream.IntStream;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;

/**
 * Host-device copies of Java {@code long[]} through two reused pinned slots: while the device copies one slot,
 * the host fills (or drains) the other, so the Java-side copy and the DMA overlap. An event per slot says when its
 * DMA is done. Create and close on a thread with the device's context current.
 */
final class StagedCopies implements AutoCloseable {

    /** Longs per pinned staging slot (32 MiB); larger copies go in chunks, alternating between two slots. */
    private static final int STAGING_SLOT_LONGS = 1 << 22;
    /** Host copies of at least this many longs are split over threads, in slices of COPY_SLICE. */
    private static final int PARALLEL_COPY_MIN = 1 << 18;
    private static final int COPY_SLICE = 1 << 16;

    private final PinnedBuffer staging = new PinnedBuffer();
    private int stagingSlotLongs;
    private final CUevent[] slotFree = {new CUevent(), new CUevent()};
    private int eventsCreated;

    StagedCopies() {
        try {
            for (CUevent e : slotFree) {
                cuEventCreate(e, CUevent_flags.CU_EVENT_DISABLE_TIMING);
                eventsCreated++;
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Copies {@code src[0, n)} to {@code dst}; returns once the host array may change again. */
    void upload(long[] src, int n, CUdeviceptr dst) {
        prepareStaging(n);
        for (int done = 0, chunkIndex = 0; done < n; chunkIndex++) {
            final int chunk = Math.min(STAGING_SLOT_LONGS, n - done);
            final int slot = chunkIndex & 1;
            cuEventSynchronize(slotFree[slot]); // the slot's previous copy has left it
            final long slotStart = (long) slot * stagingSlotLongs;
            pack(src, done, chunk, (int) slotStart);
            cuMemcpyHtoDAsync(dst.withByteOffset(done * 8L), staging.pointer(slotStart * 8), chunk * 8L, null);
            cuEventRecord(slotFree[slot], null);
            done += chunk;
        }
    }

    /** Copies {@code n} longs from {@code src} into {@code dst[0, n)}, after the work queued before. */
    void download(CUdeviceptr src, long[] dst, int n) {
        prepareStaging(n);
        final int chunks = (int) ((n + (long) STAGING_SLOT_LONGS - 1) / STAGING_SLOT_LONGS);
        for (int c = 0; c < chunks; c++) {
            if (c == 0) {
                copyChunkToHost(src, n, 0);
            }
            if (c + 1 < chunks) {
                copyChunkToHost(src, n, c + 1); // runs while chunk c is unpacked
            }
            cuEventSynchronize(slotFree[c & 1]);
            final int from = c * STAGING_SLOT_LONGS;
            unpack(dst, from, Math.min(STAGING_SLOT_LONGS, n - from), (int) ((c & 1) * (long) stagingSlotLongs));
        }
    }

    private void copyChunkToHost(CUdeviceptr src, int n, int chunkIndex) {
        final long from = (long) chunkIndex * STAGING_SLOT_LONGS;
        final long count = Math.min(STAGING_SLOT_LONGS, n - from);
        final int slot = chunkIndex & 1;
        cuMemcpyDtoHAsync(staging.pointer((long) slot * stagingSlotLongs * 8), src.withByteOffset(from * 8), count * 8,
                null);
        cuEventRecord(slotFree[slot], null);
    }

    /** Sizes the two slots for a copy of n longs; waits for copies in flight before the buffer is replaced. */
    private void prepareStaging(int n) {
        final int slotLongs = Math.min(Math.max(n, 1), STAGING_SLOT_LONGS);
        if (slotLongs > stagingSlotLongs) {
            cuEventSynchronize(slotFree[0]);
            cuEventSynchronize(slotFree[1]);
            final int grown = (int) Math.min(STAGING_SLOT_LONGS, Math.max(slotLongs, stagingSlotLongs * 3L / 2));
            staging.ensureLongs(2L * grown);
            stagingSlotLongs = grown;
        }
    }

    /**
     * Copies {@code src[from, from + count)} to the staging buffer at {@code stagingAt}. One thread copies at about
     * 5 GB/s, a tenth of what pinned transfers reach, so large batches are copied in slices on the common pool.
     */
    private void pack(long[] src, int from, int count, int stagingAt) {
        final LongBuffer buffer = staging.longs();
        if (count < PARALLEL_COPY_MIN) {
            buffer.put(stagingAt, src, from, count);
            return;
        }
        IntStream.range(0, (count + COPY_SLICE - 1) / COPY_SLICE).parallel().forEach(slice -> {
            final int at = slice * COPY_SLICE;
            buffer.duplicate().put(stagingAt + at, src, from + at, Math.min(COPY_SLICE, count - at));
        });
    }

    /** Copies the staging buffer from {@code stagingAt} to {@code dst[from, from + count)}, in parallel when large. */
    private void unpack(long[] dst, int from, int count, int stagingAt) {
        final LongBuffer buffer = staging.longs();
        if (count < PARALLEL_COPY_MIN) {
            buffer.get(stagingAt, dst, from, count);
            return;
        }
        IntStream.range(0, (count + COPY_SLICE - 1) / COPY_SLICE).parallel().forEach(slice -> {
            final int at = slice * COPY_SLICE;
            buffer.duplicate().get(stagingAt + at, dst, from + at, Math.min(COPY_SLICE, count - at));
        });
    }

    @Override
    public void close() {
        for (int i = 0; i < eventsCreated; i++) {
            cuEventSynchronize(slotFree[i]);
            cuEventDestroy(slotFree[i]);
        }
        eventsCreated = 0;
        staging.close();
    }
}
