package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoD;
import static jcuda.driver.JCudaDriver.cuMemsetD32;

import io.flix.index.AbstractFlixIndex;
import io.flix.index.Backend;
import io.flix.index.BatchArgs;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.IndexStats;
import io.flix.index.RangeResult;

import java.io.IOException;
import java.util.concurrent.locks.Lock;

import jcuda.driver.CUdeviceptr;

/**
 * The GPU baseline of the FliX paper's experiments, not a product backend (it is not in {@link Backend}): keys and
 * values in two device arrays sorted by key. Lookups are one binary search per thread over the queries in the
 * order given (sorted queries are what make it fast); updates rebuild the array ("full rebuild"): the batch is
 * sorted (CUB) and reduced to the last occurrence of each key, then merged with the array into a second array (each
 * element's position is its own index plus its rank in the other array, less the replaced keys before it), and the
 * two arrays swap. Deletes flag the matched elements and compact them into the second array. Kernels:
 * {@code src/main/cuda/sorted_array_kernels.cu}.
 *
 * <p>It meets the {@link FlixIndex} contract, so the conformance suite checks it. {@link #stats()} reports the
 * sorted arrays' bytes; the second array and batch scratch are reported apart ({@link #scratchBytes()}). It has no
 * nodes or buckets: {@link #restructure()} only trims the arrays to the keys held and returns 0. The
 * {@link DeviceLongs} overloads time the device work alone, as {@link GpuFlixIndex}'s do. Lookups run one at a time,
 * as {@link GpuFlixIndex}'s do.
 */
public final class GpuSortedArrayIndex extends AbstractFlixIndex implements DeviceResidentIndex {

    private static final int MODE_GET = 0;
    private static final int MODE_CEILING = 1;
    private static final int MODE_FLOOR = 2;
    /** Most keys held: the scans run over size + 1 ints. */
    private static final long MAX_SIZE = Integer.MAX_VALUE - 8L;

    private final GpuRuntime.DeviceContext device;
    private final StagedCopies copies;
    private final DeviceBuffer counters;

    /** The sorted arrays and how many longs each can hold. */
    private DeviceBuffer keys;
    private DeviceBuffer values;
    private long capacity;
    /** The arrays that the next rebuild writes into, then swaps with the sorted arrays. */
    private DeviceBuffer spareKeys;
    private DeviceBuffer spareValues;
    private long spareCapacity;
    private int size;

    private final Scratch batchKeys = new Scratch("batch keys");
    private final Scratch batchValues = new Scratch("batch values");
    private final Scratch flags = new Scratch("flags");
    private final Scratch flagPositions = new Scratch("flag positions");
    private final Scratch ranks = new Scratch("batch ranks");
    private final Scratch outKeys = new Scratch("result keys");
    private final Scratch outValues = new Scratch("result values");
    private final Scratch counts = new Scratch("range counts");
    private final Scratch offsets = new Scratch("range offsets");
    private final Scratch[] scratches = {batchKeys, batchValues, flags, flagPositions, ranks, outKeys, outValues,
        counts, offsets};
    /** Launches, CUB, and the batch checks, sorts and dedupe (the same steps as the FliX index's). */
    private final DeviceSteps steps;

    private GpuSortedArrayIndex(GpuRuntime.DeviceContext device) {
        super(Backend.GPU, false);
        this.device = device;
        this.steps = new DeviceSteps(device, GpuRuntime.SORTED_ARRAY_FATBIN_RESOURCE, step -> { });
        StagedCopies c = null;
        try {
            c = new StagedCopies();
            this.counters = DeviceBuffer.allocate(4L * Long.BYTES, "counters");
        } catch (RuntimeException e) {
            if (c != null) {
                c.close();
            }
            steps.close();
            throw e;
        }
        this.copies = c;
    }

    /**
     * Opens an empty sorted array on the configured device (the other settings of {@code config} do not apply).
     *
     * @throws IllegalStateException where no GPU is usable ({@link GpuSupport#unavailableReason()})
     */
    public static GpuSortedArrayIndex open(FlixConfig config) {
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
        final String reason = GpuSupport.unavailableReason();
        if (reason != null) {
            throw new IllegalStateException(reason);
        }
        try {
            return new GpuSortedArrayIndex(GpuRuntime.device(config.device()));
        } catch (IOException e) {
            throw new IllegalStateException("GPU backend unavailable: " + e.getMessage(), e);
        }
    }

    // -------------------------------------------------------------------------------------------------------------
    // Updates

    @Override
    protected void buildLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        enter();
        DeviceSteps.checkPairArrays(keys, values, n, keysSorted);
        final int m = n == 0 ? 0 : steps.checkSortAndDedupe(uploadPairs(keys, values, n), batchValues.buffer(), n,
                keysSorted, true, null);
        ensureArrays(m);
        if (m > 0) {
            cuMemcpyDtoD(this.keys.pointer(), steps.dedupedKeys().pointer(), m * 8L);
            cuMemcpyDtoD(this.values.pointer(), steps.dedupedValues().pointer(), m * 8L);
        }
        size = m;
    }

    @Override
    protected void upsertLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        enter();
        DeviceSteps.checkPairArrays(keys, values, n, keysSorted);
        if (n == 0) {
            return;
        }
        final DeviceBuffer batch = uploadPairs(keys, values, n);
        upsertOnDevice(batch, batchValues.buffer(), n, keysSorted, true);
    }

    /**
     * {@link #upsert(long[], long[], int, boolean)} of pairs already on the device: times the device work alone.
     * The batch is not modified; returns once the device is done.
     */
    @Override
    public void upsert(DeviceLongs keys, DeviceLongs values, int n, boolean keysSorted) {
        final Lock held = enterUpdate();
        try {
            enter();
            DeviceLongs.checkArgs(n, device.ordinal, keys, "keys", values, "values");
            if (n == 0) {
                return;
            }
            upsertOnDevice(keys.buffer(), values.buffer(), n, keysSorted, false);
            cuCtxSynchronize();
        } finally {
            held.unlock();
        }
    }

    private void upsertOnDevice(DeviceBuffer batchK, DeviceBuffer batchV, int n, boolean keysSorted,
                                boolean hostChecked) {
        final int m = steps.checkSortAndDedupe(batchK, batchV, n, keysSorted, hostChecked, null);
        final DeviceBuffer dedupedKeys = steps.dedupedKeys();
        final DeviceBuffer dedupedValues = steps.dedupedValues();
        final DeviceBuffer rankInArray = ranks.ensure(m * 4L);
        final DeviceBuffer dup = flags.ensure((m + 1L) * 4);
        final DeviceBuffer dupPrefix = flagPositions.ensure((m + 1L) * 4);
        launch("sa_batch_ranks", m + 1L, keys, size, dedupedKeys, m, rankInArray, dup);
        scanInt(dup, dupPrefix, m + 1);
        final long replaced = readInt(dupPrefix, m);
        final long newSize = size + m - replaced;
        if (newSize > MAX_SIZE) {
            throw new IllegalStateException("the sorted array holds at most " + MAX_SIZE + " keys, " + newSize
                    + " requested");
        }
        ensureSpare(newSize); // the one allocation that can fail; nothing has changed yet
        launch("sa_merge_batch", m, dedupedKeys, dedupedValues, m, rankInArray, dupPrefix, spareKeys, spareValues);
        launch("sa_merge_array", size, keys, values, size, dedupedKeys, m, dupPrefix, spareKeys, spareValues);
        swap((int) newSize);
    }

    @Override
    protected void deleteLocked(long[] keys, int n, boolean keysSorted) {
        enter();
        DeviceSteps.checkKeyArray(keys, n, keysSorted);
        if (n == 0) {
            return;
        }
        deleteOnDevice(uploadKeys(keys, n), n, keysSorted, true);
    }

    /**
     * {@link #delete(long[], int, boolean)} of keys already on the device: times the device work alone. The batch is
     * not modified; returns once the device is done.
     */
    @Override
    public void delete(DeviceLongs keys, int n, boolean keysSorted) {
        final Lock held = enterUpdate();
        try {
            enter();
            DeviceLongs.checkArgs(n, device.ordinal, keys, "keys");
            if (n == 0) {
                return;
            }
            deleteOnDevice(keys.buffer(), n, keysSorted, false);
            cuCtxSynchronize();
        } finally {
            held.unlock();
        }
    }

    private void deleteOnDevice(DeviceBuffer batchK, int n, boolean keysSorted, boolean hostChecked) {
        steps.checkOnDevice(batchK, null, n, keysSorted, hostChecked);
        if (size == 0) {
            return;
        }
        CUdeviceptr batch = batchK.pointer();
        if (!keysSorted) { // sorted probes walk the same search paths: faster than the sort costs
            steps.sortKeys(batchK, n);
            batch = steps.sortedKeys().pointer();
        }
        final DeviceBuffer keep = flags.ensure((size + 1L) * 4);
        cuMemsetD32(keep.pointer(), 1, size);
        cuMemsetD32(keep.at(size * 4L), 0, 1);
        launch("sa_flag_deleted", n, keys, size, batch, n, keep);
        final DeviceBuffer keptPositions = flagPositions.ensure((size + 1L) * 4);
        scanInt(keep, keptPositions, size + 1);
        final int kept = (int) readInt(keptPositions, size);
        if (kept == size) {
            return;
        }
        ensureSpare(kept);
        launch("sa_compact_kept", size, keys, values, keep, keptPositions, size, spareKeys, spareValues);
        swap(kept);
    }

    // -------------------------------------------------------------------------------------------------------------
    // Lookups

    @Override
    protected void getLocked(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        enter();
        DeviceSteps.checkKeyArray(keys, n, keysSorted);
        BatchArgs.checkArray(valuesOut, "valuesOut", n);
        lookup(MODE_GET, keys, n, null, valuesOut, keysSorted);
    }

    @Override
    protected void ceilingLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        enter();
        DeviceSteps.checkKeyArray(keys, n, keysSorted);
        BatchArgs.checkArray(keysOut, "keysOut", n);
        BatchArgs.checkArray(valuesOut, "valuesOut", n);
        lookup(MODE_CEILING, keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    protected void floorLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        enter();
        DeviceSteps.checkKeyArray(keys, n, keysSorted);
        BatchArgs.checkArray(keysOut, "keysOut", n);
        BatchArgs.checkArray(valuesOut, "valuesOut", n);
        lookup(MODE_FLOOR, keys, n, keysOut, valuesOut, keysSorted);
    }

    /**
     * {@link #get(long[], int, long[], boolean)} with the keys and the results on the device: times the device work
     * alone. Returns once the device is done. {@code keysSorted} is checked; the queries are searched in the order
     * given either way.
     */
    @Override
    public void get(DeviceLongs keys, int n, DeviceLongs valuesOut, boolean keysSorted) {
        final Lock held = enterLookup();
        try {
            enter();
            DeviceLongs.checkArgs(n, device.ordinal, keys, "keys", valuesOut, "valuesOut");
            if (n == 0) {
                return;
            }
            lookupOnDevice(MODE_GET, keys.buffer(), n, keysSorted, false, null, valuesOut.buffer());
            cuCtxSynchronize();
        } finally {
            held.unlock();
        }
    }

    /** {@link #ceiling(long[], int, long[], long[], boolean)} on the device, as {@link #get(DeviceLongs, int, DeviceLongs, boolean)}. */
    @Override
    public void ceiling(DeviceLongs keys, int n, DeviceLongs keysOut, DeviceLongs valuesOut, boolean keysSorted) {
        final Lock held = enterLookup();
        try {
            enter();
            DeviceLongs.checkArgs(n, device.ordinal, keys, "keys", keysOut, "keysOut", valuesOut, "valuesOut");
            if (n == 0) {
                return;
            }
            lookupOnDevice(MODE_CEILING, keys.buffer(), n, keysSorted, false, keysOut.buffer(), valuesOut.buffer());
            cuCtxSynchronize();
        } finally {
            held.unlock();
        }
    }

    private void lookup(int mode, long[] queries, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        if (n == 0) {
            return;
        }
        final DeviceBuffer q = uploadKeys(queries, n);
        final DeviceBuffer valuesResult = outValues.ensure(n * 8L);
        final DeviceBuffer keysResult = keysOut == null ? null : outKeys.ensure(n * 8L);
        lookupOnDevice(mode, q, n, keysSorted, true, keysResult, valuesResult);
        copies.download(valuesResult.pointer(), valuesOut, n);
        if (keysOut != null) {
            copies.download(keysResult.pointer(), keysOut, n);
        }
    }

    private void lookupOnDevice(int mode, DeviceBuffer queries, int n, boolean keysSorted, boolean hostChecked,
                                DeviceBuffer keysResult, DeviceBuffer valuesResult) {
        steps.checkOnDevice(queries, null, n, keysSorted, hostChecked);
        launch("sa_lookup", n, mode, keys, values, size, queries, n, keysResult, valuesResult);
    }

    @Override
    protected RangeResult rangeLocked(long[] lo, long[] hi, int n, int limitPerRange) {
        enter();
        BatchArgs.checkRanges(lo, hi, n, limitPerRange);
        if (n == 0) {
            return new RangeResult(new int[1], new long[0], new long[0]);
        }
        copies.upload(lo, n, batchKeys.ensure(n * 8L).pointer());
        copies.upload(hi, n, batchValues.ensure(n * 8L).pointer());
        final DeviceBuffer rangeCounts = counts.ensure((n + 1L) * Long.BYTES);
        launch("sa_range_count", n + 1L, batchKeys.buffer(), batchValues.buffer(), n, limitPerRange, keys, size,
                rangeCounts);
        final DeviceBuffer rangeOffsets = offsets.ensure((n + 1L) * Long.BYTES);
        scanLong(rangeCounts, rangeOffsets, n + 1);
        final long total = readLong(rangeOffsets, n);
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("ranges hold " + total + " pairs, too many for one result: lower "
                    + "limitPerRange or split the batch");
        }
        final long[] keysResult = new long[(int) total];
        final long[] valuesResult = new long[(int) total];
        if (total > 0) {
            launch("sa_range_fill", n, batchKeys.buffer(), n, keys, values, size, rangeOffsets,
                    outKeys.ensure(total * 8), outValues.ensure(total * 8));
            copies.download(outKeys.pointer(), keysResult, (int) total);
            copies.download(outValues.pointer(), valuesResult, (int) total);
        }
        final long[] longOffsets = new long[n + 1];
        copies.download(rangeOffsets.pointer(), longOffsets, n + 1);
        final int[] csr = new int[n + 1];
        for (int i = 0; i <= n; i++) {
            csr[i] = (int) longOffsets[i];
        }
        return new RangeResult(csr, keysResult, valuesResult);
    }

    @Override
    protected int exportFromLocked(long fromKey, long[] keysOut, long[] valuesOut) {
        enter();
        BatchArgs.checkExport(keysOut, valuesOut);
        if (keysOut.length == 0 || size == 0) {
            return 0;
        }
        launch("sa_lower_bound_one", 1, keys, size, fromKey, counters);
        final long first = readLong(counters, 0);
        final int copied = (int) Math.min(keysOut.length, size - first);
        if (copied > 0) {
            copies.download(keys.at(first * 8), keysOut, copied);
            copies.download(values.at(first * 8), valuesOut, copied);
        }
        return copied;
    }

    /** Trims the arrays to the keys held (a sorted array has nothing else to restructure); returns 0. */
    @Override
    protected long restructureLocked() {
        enter();
        final long target = Math.max(1, size);
        if (capacity > target + target / 8) {
            try {
                final DeviceBuffer k = DeviceBuffer.allocate(target * 8, "sorted keys (" + target + ")");
                final DeviceBuffer v;
                try {
                    v = DeviceBuffer.allocate(target * 8, "sorted values (" + target + ")");
                } catch (RuntimeException e) {
                    k.close();
                    throw e;
                }
                if (size > 0) {
                    cuMemcpyDtoD(k.pointer(), keys.pointer(), size * 8L);
                    cuMemcpyDtoD(v.pointer(), values.pointer(), size * 8L);
                }
                keys.close();
                values.close();
                keys = k;
                values = v;
                capacity = target;
            } catch (GpuOutOfMemoryException e) {
                // keep the larger arrays: they hold the keys as well
            }
        }
        return 0;
    }

    // -------------------------------------------------------------------------------------------------------------
    // Shape

    @Override
    protected long sizeLocked() {
        enter();
        return size;
    }

    /** Size and the sorted arrays' bytes; no buckets or nodes. */
    @Override
    protected IndexStats statsLocked() {
        enter();
        return new IndexStats(Backend.GPU, size, 0, 0, 0, 1, 0, arrayBytes());
    }

    /** Device bytes held besides the sorted arrays: the second pair of arrays and batch scratch. */
    @Override
    public long scratchBytes() {
        final Lock held = enterLookup();
        try {
            enter();
            long bytes = counters.bytes() + steps.scratchBytes()
                    + (spareKeys == null ? 0 : spareKeys.bytes() + spareValues.bytes());
            for (Scratch s : scratches) {
                bytes += s.bytes();
            }
            return bytes;
        } finally {
            held.unlock();
        }
    }

    @Override
    public int deviceOrdinal() {
        return device.ordinal;
    }

    /** The process-wide context of this index's device, shared by every index open on it (for tests). */
    GpuRuntime.DeviceContext deviceContext() {
        return device;
    }

    /** Frees the device memory and the pinned staging memory. */
    @Override
    protected void closeLocked() {
        device.makeCurrent();
        for (DeviceBuffer b : new DeviceBuffer[] {keys, values, spareKeys, spareValues}) {
            if (b != null) {
                b.close();
            }
        }
        keys = values = spareKeys = spareValues = null;
        for (Scratch s : scratches) {
            s.close();
        }
        steps.close();
        copies.close();
        counters.close();
    }

    // -------------------------------------------------------------------------------------------------------------
    // Internals

    private long arrayBytes() {
        return keys == null ? 0 : keys.bytes() + values.bytes();
    }

    /** Makes the sorted arrays hold exactly {@code n} longs (at least one) for a build; contents not kept. */
    private void ensureArrays(long n) {
        final long need = Math.max(1, n);
        if (keys != null && capacity == need) {
            return;
        }
        final DeviceBuffer k = DeviceBuffer.allocate(need * 8, "sorted keys (" + need + ")");
        final DeviceBuffer v;
        try {
            v = DeviceBuffer.allocate(need * 8, "sorted values (" + need + ")");
        } catch (RuntimeException e) {
            k.close();
            throw e;
        }
        if (keys != null) {
            keys.close();
            values.close();
        }
        keys = k;
        values = v;
        capacity = need;
    }

    /** Makes the spare arrays hold {@code n} longs, with an eighth more room when they grow. */
    private void ensureSpare(long n) {
        if (spareKeys != null && spareCapacity >= n) {
            return;
        }
        final long grown = Math.max(1, Math.min(MAX_SIZE, n + n / 8));
        final DeviceBuffer k = DeviceBuffer.allocate(grown * 8, "rebuilt keys (" + grown + ")");
        final DeviceBuffer v;
        try {
            v = DeviceBuffer.allocate(grown * 8, "rebuilt values (" + grown + ")");
        } catch (RuntimeException e) {
            k.close();
            throw e;
        }
        if (spareKeys != null) {
            spareKeys.close();
            spareValues.close();
        }
        spareKeys = k;
        spareValues = v;
        spareCapacity = grown;
    }

    /** The rebuilt arrays become the sorted arrays; the old ones are the next spare. */
    private void swap(int newSize) {
        final DeviceBuffer k = keys;
        final DeviceBuffer v = values;
        final long c = capacity;
        keys = spareKeys;
        values = spareValues;
        capacity = spareCapacity;
        spareKeys = k;
        spareValues = v;
        spareCapacity = c;
        size = newSize;
    }

    private DeviceBuffer uploadKeys(long[] src, int n) {
        final DeviceBuffer b = batchKeys.ensure(n * 8L);
        copies.upload(src, n, b.pointer());
        return b;
    }

    private DeviceBuffer uploadPairs(long[] k, long[] v, int n) {
        copies.upload(v, n, batchValues.ensure(n * 8L).pointer());
        return uploadKeys(k, n);
    }

    /** Makes the device's context current on the calling thread; first in every call (the lock is held). */
    private void enter() {
        device.makeCurrent();
    }

    private void scanInt(DeviceBuffer in, DeviceBuffer out, long n) {
        steps.scanInt(in, out, (int) n);
    }

    private void scanLong(DeviceBuffer in, DeviceBuffer out, int n) {
        steps.scanLong(in, out, n);
    }

    private long readLong(DeviceBuffer buffer, long index) {
        return steps.readLong(buffer, index);
    }

    private long readInt(DeviceBuffer buffer, long index) {
        return steps.readInt(buffer, index);
    }

    /** One thread per item. */
    private void launch(String kernel, long threads, Object... args) {
        steps.launch(kernel, threads, args);
    }
}
