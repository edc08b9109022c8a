package io.flix.index.gpu;

import static io.flix.index.gpu.DeviceBuffer.pointerOf;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.IndexStats;

import java.util.function.Supplier;

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
 *
 * <p>It ships with the benchmarks (flix-bench), not in a user's jar, yet sits in the GPU backend's package: it is
 * built on the host layer's package-private hooks ({@link AbstractGpuIndex}), which stay out of the public API.
 */
public final class GpuSortedArrayIndex extends AbstractGpuIndex {

    /** The counter slot sa_lower_bound_one writes (the first index whose key is >= x); the only one. */
    private static final int SLOT_LOWER_BOUND = 0;
    private static final int COUNTER_SLOTS = 1;
    /** Most keys held: the scans run over size + 1 ints. */
    private static final long MAX_SIZE = Integer.MAX_VALUE - 8L;

    /** The sorted arrays and how many longs each can hold. */
    private DeviceBuffer keys;
    private DeviceBuffer values;
    private long capacity;
    /** The arrays that the next rebuild writes into, then swaps with the sorted arrays. */
    private DeviceBuffer spareKeys;
    private DeviceBuffer spareValues;
    private long spareCapacity;
    private int size;

    private final Scratch flags = scratch("flags");
    private final Scratch flagPositions = scratch("flag positions");
    private final Scratch ranks = scratch("batch ranks");
    private final SortedArrayKernels arrayKernels = new SortedArrayKernels(device, stream, this::trace);

    private GpuSortedArrayIndex(FlixConfig config, GpuRuntime.DeviceContext device) {
        super(device, config.gpuMemoryBudget(), COUNTER_SLOTS,
                config.gpuTuning().withSystemPropertyOverrides().registerHeap());
    }

    /**
     * Opens an empty sorted array on the configured device, within the configured GPU memory budget, its host
     * arrays crossing the bus as the tuning's {@code registerHeap} says (the other settings of {@code config} do not
     * apply).
     *
     * @throws IllegalStateException where no GPU is usable ({@link GpuSupport#unavailableReason()})
     */
    public static GpuSortedArrayIndex open(FlixConfig config) {
        requireConfig(config);
        return new GpuSortedArrayIndex(config, openDevice(config));
    }

    // -------------------------------------------------------------------------------------------------------------
    // Updates

    @Override
    void layoutSorted(DeviceBuffer dedupedKeys, Supplier<DeviceBuffer> dedupedValues, long m) {
        // the values arrive and are checked before anything changes
        final DeviceBuffer pairValues = m == 0 ? null : dedupedValues.get();
        ensureArrays(m);
        if (m > 0) {
            stream.copy(this.keys.pointer(), dedupedKeys.pointer(), m * 8L);
            stream.copy(this.values.pointer(), pairValues.pointer(), m * 8L);
        }
        size = (int) m;
    }

    @Override
    void upsertOnDevice(DeviceBuffer batchK, DeviceBuffer batchV, int n, boolean keysSorted, boolean hostChecked) {
        final int m = steps.checkSortAndDedupe(batchK, batchV, n, keysSorted, hostChecked, null);
        final DeviceBuffer dedupedKeys = steps.dedupedKeys();
        final DeviceBuffer dedupedValues = steps.dedupedValues();
        final DeviceBuffer rankInArray = ranks.ensure(m * 4L);
        final DeviceBuffer dup = flags.ensure((m + 1L) * 4);
        final DeviceBuffer dupPrefix = flagPositions.ensure((m + 1L) * 4);
        arrayKernels.saBatchRanks(pointerOf(keys), size, dedupedKeys.pointer(), m, rankInArray.pointer(),
                dup.pointer());
        steps.scanInt(dup, dupPrefix, m + 1);
        final long replaced = steps.readInt(dupPrefix, m);
        final long newSize = size + m - replaced;
        if (newSize > MAX_SIZE) {
            throw new IllegalStateException("the sorted array holds at most " + MAX_SIZE + " keys, " + newSize
                    + " requested");
        }
        ensureSpare(newSize); // the one allocation that can fail; nothing has changed yet
        arrayKernels.saMergeBatch(dedupedKeys.pointer(), dedupedValues.pointer(), m, rankInArray.pointer(),
                dupPrefix.pointer(), spareKeys.pointer(), spareValues.pointer());
        arrayKernels.saMergeArray(pointerOf(keys), pointerOf(values), size, dedupedKeys.pointer(), m,
                dupPrefix.pointer(), spareKeys.pointer(), spareValues.pointer());
        swap((int) newSize);
    }

    @Override
    void deleteOnDevice(DeviceBuffer batchK, int n, boolean keysSorted, boolean hostChecked) {
        steps.checkOnDevice(batchK, n, keysSorted, hostChecked);
        if (size == 0) {
            return;
        }
        CUdeviceptr batch = batchK.pointer();
        if (!keysSorted) { // sorted probes walk the same search paths: faster than the sort costs
            steps.sortKeys(batchK, n);
            batch = steps.sortedKeys().pointer();
        }
        final DeviceBuffer keep = flags.ensure((size + 1L) * 4);
        stream.fillInts(keep.pointer(), 1, size);
        stream.fillInts(keep.at(size * 4L), 0, 1);
        arrayKernels.saFlagDeleted(keys.pointer(), size, batch, n, keep.pointer());
        final DeviceBuffer keptPositions = flagPositions.ensure((size + 1L) * 4);
        steps.scanInt(keep, keptPositions, size + 1);
        final int kept = (int) steps.readInt(keptPositions, size);
        if (kept == size) {
            return;
        }
        ensureSpare(kept);
        arrayKernels.saCompactKept(keys.pointer(), values.pointer(), keep.pointer(), keptPositions.pointer(), size,
                spareKeys.pointer(), spareValues.pointer());
        swap(kept);
    }

    // -------------------------------------------------------------------------------------------------------------
    // Lookups

    /** One binary search per query, in the order given ({@code keysSorted} is checked, not used). */
    @Override
    void lookupOnDevice(int mode, DeviceBuffer queries, int n, boolean keysSorted, boolean hostChecked,
                        DeviceBuffer keysResult, DeviceBuffer valuesResult) {
        steps.checkOnDevice(queries, n, keysSorted, hostChecked);
        arrayKernels.saLookup(mode, pointerOf(keys), pointerOf(values), size, queries.pointer(), n,
                pointerOf(keysResult), valuesResult.pointer());
    }

    /** One thread a range, and one that writes counts[n]. */
    @Override
    void countRanges(DeviceBuffer lo, DeviceBuffer hi, int n, int limit, DeviceBuffer rangeCounts) {
        arrayKernels.saRangeCount(lo.pointer(), hi.pointer(), n, limit, pointerOf(keys), size, rangeCounts.pointer());
    }

    @Override
    void fillRanges(DeviceBuffer lo, DeviceBuffer hi, int n, int limit, DeviceBuffer rangeCounts,
                    DeviceBuffer rangeOffsets, DeviceBuffer keysOut, DeviceBuffer valuesOut) {
        arrayKernels.saRangeFill(lo.pointer(), n, keys.pointer(), values.pointer(), size, rangeOffsets.pointer(),
                keysOut.pointer(), valuesOut.pointer());
    }

    @Override
    int exportFromDevice(long fromKey, long[] keysOut, long[] valuesOut) {
        arrayKernels.saLowerBoundOne(keys.pointer(), size, fromKey, counters.at(SLOT_LOWER_BOUND));
        final long first = counters.readLong(SLOT_LOWER_BOUND);
        final int copied = (int) Math.min(keysOut.length, size - first);
        if (copied > 0) {
            download(keys.at(first * 8), keysOut, copied);
            download(values.at(first * 8), valuesOut, copied);
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
                resizeArrays(target, true);
            } catch (GpuOutOfMemoryException e) {
                // keep the larger arrays: they hold the keys as well
            }
        }
        return 0;
    }

    // -------------------------------------------------------------------------------------------------------------
    // Shape

    @Override
    long keyCount() {
        return size;
    }

    /** Size and the sorted arrays' bytes; no buckets or nodes. */
    @Override
    protected IndexStats statsLocked() {
        enter();
        return new IndexStats(Backend.GPU, size, 0, 0, 0, 1, 0, arrayBytes());
    }

    /** The second pair of arrays (batch scratch is counted by the caller). */
    @Override
    long structureScratchBytes() {
        return spareKeys == null ? 0 : spareKeys.bytes() + spareValues.bytes();
    }

    /** Frees the sorted arrays and the second pair. */
    @Override
    void releaseStructure() {
        for (DeviceBuffer b : new DeviceBuffer[] {keys, values, spareKeys, spareValues}) {
            if (b != null) {
                b.close();
            }
        }
        keys = values = spareKeys = spareValues = null;
    }

    // -------------------------------------------------------------------------------------------------------------
    // Internals

    private long arrayBytes() {
        return keys == null ? 0 : keys.bytes() + values.bytes();
    }

    /** Makes the sorted arrays hold exactly {@code n} longs (at least one) for a build; contents not kept. */
    private void ensureArrays(long n) {
        final long need = Math.max(1, n);
        if (keys == null || capacity != need) {
            resizeArrays(need, false);
        }
    }

    /** Gives the sorted arrays room for exactly {@code n} longs, keeping the pairs held where {@code keep}. */
    private void resizeArrays(long n, boolean keep) {
        final DeviceBuffer[] kv = allocateArrays(n, "sorted");
        if (keep && size > 0) {
            stream.copy(kv[0].pointer(), keys.pointer(), size * 8L);
            stream.copy(kv[1].pointer(), values.pointer(), size * 8L);
        }
        if (keys != null) {
            stream.synchronize(); // the copies have read the old arrays
            keys.close();
            values.close();
        }
        keys = kv[0];
        values = kv[1];
        capacity = n;
    }

    /** A keys array and a values array of {@code n} longs each, both or neither. */
    private DeviceBuffer[] allocateArrays(long n, String what) {
        return DeviceBuffer.allocateAll(2, i -> DeviceBuffer.allocate(memory, n * 8,
                what + (i == 0 ? " keys (" : " values (") + n + ")"));
    }

    /** Makes the spare arrays hold {@code n} longs, with an eighth more room when they grow. */
    private void ensureSpare(long n) {
        if (spareKeys != null && spareCapacity >= n) {
            return;
        }
        final long grown = Math.max(1, Math.min(MAX_SIZE, n + n / 8));
        final DeviceBuffer[] kv = allocateArrays(grown, "rebuilt");
        if (spareKeys != null) {
            spareKeys.close();
            spareValues.close();
        }
        spareKeys = kv[0];
        spareValues = kv[1];
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

}
