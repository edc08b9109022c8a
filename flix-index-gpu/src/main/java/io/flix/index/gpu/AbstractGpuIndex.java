package io.flix.index.gpu;

import static io.flix.index.gpu.KernelContract.MODE_CEILING;
import static io.flix.index.gpu.KernelContract.MODE_FLOOR;
import static io.flix.index.gpu.KernelContract.MODE_GET;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;

import io.flix.index.AbstractFlixIndex;
import io.flix.index.Backend;
import io.flix.index.BatchArgs;
import io.flix.index.FlixConfig;
import io.flix.index.GpuMemoryBudget;
import io.flix.index.GpuTuning;
import io.flix.index.RangeResult;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Lock;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.IntStream;

import jcuda.driver.CUdeviceptr;

/**
 * The host side that the GPU structures share, written once under both ({@link GpuFlixIndex},
 * {@link GpuSortedArrayIndex}), as cuCollections keeps one open-addressing implementation under its set and map:
 * every entry point (argument checks, the device's context made current, uploads and downloads through pinned
 * staging, the {@link DeviceLongs} overloads, the range count, scan and fill into CSR offsets, export's checks)
 * and the device, staging, batch steps, counters and scratch they use. A structure implements the device work of
 * each operation ({@link #layoutSorted}, {@link #upsertOnDevice}, {@link #deleteOnDevice},
 * {@link #lookupOnDevice}, {@link #countRanges} and {@link #fillRanges}, {@link #exportFromDevice}) and its shape.
 *
 * <p>Lookups run one at a time, as updates do: every call works in the index's batch scratch, staging memory and
 * streams. The streams are the index's own ({@link DeviceStream}: one for its device work, one for copies each
 * way), never the legacy default stream, so indexes that share a device (the subtasks of a task manager, several
 * dimensions) overlap rather than queue behind each other. Host arrays go over the bus straight from the heap where it
 * is registered ({@link DirectCopies}, {@link HeapRegistration}), else in pieces through pinned staging ({@link
 * StagedCopies}); a lookup is a pipeline of chunks, each going up, looked up and coming back while the next goes up.
 */
abstract class AbstractGpuIndex extends AbstractFlixIndex implements DeviceResidentIndex {

    final GpuRuntime.DeviceContext device;
    /** The stream of the index's device work (kernels, CUB, fills, reads). */
    final DeviceStream stream;
    /** The kernels of flix_kernels.cu, one typed launch each. */
    final FlixKernels kernels;
    /** CUB, small reads, and the batch checks, sorts and dedupe. */
    final DeviceSteps steps;
    /** How host arrays cross the bus: straight from the registered heap, or through pinned staging. */
    final HostArrayCopies copies;
    /** Small results the kernels write and the host reads, in the structure's named slots. */
    final DeviceCounters counters;
    /** Where every device allocation of this index is reserved, within its GPU memory budget. */
    final DeviceMemoryLedger.Account memory;

    private final List<Scratch> scratches = new ArrayList<>();
    final Scratch batchKeys;
    final Scratch batchValues;
    final Scratch outKeys;
    final Scratch outValues;
    final Scratch counts;
    final Scratch offsets;
    /** Where each group of a range call's ranges starts in the offsets, and the total. */
    private final Scratch rangeGroupEnds;
    private boolean lastLookupPipelined;

    /**
     * Unsorted update batches of at least this many pairs send their keys first and do the work on the keys alone
     * (the sort, the structure's memory) while their values cross the bus (where the copies can upload in the
     * background): below it that work is short, and the extra gather pass not worth it.
     */
    static final int UNSORTED_KEYS_FIRST_MIN = 1 << 20;

    /**
     * Sorted update batches send their keys first from this many pairs: their work on the keys alone (the check,
     * the runs, the structure's memory) is shorter, and below it the values' copy of its own cost restores more
     * than it hid (docs/results/gpu-keys-first-h200-2026-11-24.md).
     */
    static final int SORTED_KEYS_FIRST_MIN = 1 << 23;

    /**
     * @param budget       the GPU memory budget of the index's allocations ({@link FlixConfig#gpuMemoryBudget()})
     * @param counterSlots slots of {@link #counters} (KernelContract's INDEX_ or SA_COUNTER_SLOTS)
     * @param registerHeap whether host arrays may cross the bus straight from the heap
     *                     ({@link GpuTuning#registerHeap()}): they do where {@link HeapRegistration} has
     *                     registered it (the first index to ask does)
     */
    AbstractGpuIndex(GpuRuntime.DeviceContext device, GpuMemoryBudget budget, int counterSlots,
                     boolean registerHeap) {
        super(Backend.GPU, false);
        this.device = device;
        this.memory = device.memory.indexAccount(budget);
        this.batchKeys = scratch("batch keys");
        this.batchValues = scratch("batch values");
        this.outKeys = scratch("result keys");
        this.outValues = scratch("result values");
        this.counts = scratch("counts");
        this.offsets = scratch("offsets");
        this.rangeGroupEnds = scratch("range group ends");
        this.stream = new DeviceStream();
        this.kernels = new FlixKernels(device, stream, this::trace);
        DeviceSteps s = null;
        HostArrayCopies c = null;
        try {
            s = new DeviceSteps(kernels, memory, this::trace);
            c = registerHeap && HeapRegistration.ensure() ? new DirectCopies(device, stream)
                    : new StagedCopies(device, stream);
            this.counters = new DeviceCounters(memory, counterSlots, "counters", stream);
        } catch (RuntimeException e) {
            if (c != null) {
                c.close();
            }
            if (s != null) {
                s.close();
            }
            stream.close();
            throw e;
        }
        this.steps = s;
        this.copies = c;
    }

    /** Checks the config that every GPU structure's {@code open} takes. */
    static void requireConfig(FlixConfig config) {
        if (config == null) {
            throw new IllegalArgumentException("config must not be null");
        }
    }

    /**
     * The configured device's context, current on the calling thread.
     *
     * @throws IllegalStateException where no GPU is usable ({@link GpuSupport#unavailableReason()})
     */
    static GpuRuntime.DeviceContext openDevice(FlixConfig config) {
        final String reason = GpuSupport.unavailableReason();
        if (reason != null) {
            throw new IllegalStateException(reason);
        }
        try {
            return GpuRuntime.device(config.device());
        } catch (IOException e) {
            throw new IllegalStateException("GPU backend unavailable: " + e.getMessage(), e);
        }
    }

    /** A scratch buffer of this index: reported by {@link #scratchBytes()}, closed with the index. */
    final Scratch scratch(String what) {
        final Scratch s = new Scratch(memory, what);
        scratches.add(s);
        return s;
    }

    // -------------------------------------------------------------------------------------------------------------
    // The structure's part

    /**
     * Replaces the contents with {@code m} sorted, distinct pairs on the device (none: m = 0, keys null). The
     * values are asked for once the structure's memory is in place: a build's may still be crossing the bus
     * ({@link DeviceSteps#dedupedValues()}).
     */
    abstract void layoutSorted(DeviceBuffer keys, Supplier<DeviceBuffer> values, long m);

    /** The upsert of a batch on the device ({@code hostChecked}: the host has checked what BatchArgs checks). */
    abstract void upsertOnDevice(DeviceBuffer keys, DeviceBuffer values, int n, boolean keysSorted,
                                 boolean hostChecked);

    /** The delete of a batch on the device, as {@link #upsertOnDevice}. */
    abstract void deleteOnDevice(DeviceBuffer keys, int n, boolean keysSorted, boolean hostChecked);

    /**
     * Makes the device checks of a sorted lookup's chunks gather into one result, read once by {@link
     * #sortFaultFound} after the last chunk, so that no chunk waits for its check; false where the structure checks
     * each chunk on its own.
     */
    boolean armSortCheck() {
        return false;
    }

    /** Whether a chunk's device check found a broken sort promise since {@link #armSortCheck}. */
    boolean sortFaultFound() {
        return false;
    }

    /** Ends what {@link #armSortCheck} started. */
    void disarmSortCheck() {
    }

    /**
     * A lookup ({@code mode}: get, ceiling or floor) of a host batch into {@code queries}, {@code values} and, but for
     * a get, {@code keys} (device arrays of its size; keys null for a get) as one launch a chunk, where the structure
     * can answer it so ({@link PipelinedLookup}); null where it cannot. Called before the sort check is armed (it may
     * prepare the structure, as unsorted lookups do).
     */
    PipelinedLookup pipelinedLookup(int mode, DeviceBuffer queries, DeviceBuffer keys, DeviceBuffer values) {
        return null;
    }

    /** Looks up {@code queries[0, n)} on the device into keysResult (null for get) and valuesResult. */
    abstract void lookupOnDevice(int mode, DeviceBuffer queries, int n, boolean keysSorted, boolean hostChecked,
                                 DeviceBuffer keysResult, DeviceBuffer valuesResult);

    /** Runs before the ranges are uploaded (a structure may prepare its chains for the walks). */
    void beforeRanges() {
    }

    /**
     * counts[i] = the pairs of range i, at most limit, or {@link KernelContract#RANGE_OUT_OF_ORDER} where its lo is
     * greater than its hi; counts[n] = 0 (for the scan).
     */
    abstract void countRanges(DeviceBuffer lo, DeviceBuffer hi, int n, int limit, DeviceBuffer counts);

    /** Writes each range's pairs from offsets[i] into keysOut and valuesOut. */
    abstract void fillRanges(DeviceBuffer lo, DeviceBuffer hi, int n, int limit, DeviceBuffer counts,
                             DeviceBuffer offsets, DeviceBuffer keysOut, DeviceBuffer valuesOut);

    /** Copies the pairs from {@code fromKey} on into the arrays (not empty, the index not empty); returns how many. */
    abstract int exportFromDevice(long fromKey, long[] keysOut, long[] valuesOut);

    /** The keys held. */
    abstract long keyCount();

    /** Device bytes the structure holds besides its own structure and the scratch here (0 by default). */
    long structureScratchBytes() {
        return 0;
    }

    /** Frees the structure's device memory (null-safe: also after a failed construction). */
    abstract void releaseStructure();

    // -------------------------------------------------------------------------------------------------------------
    // Updates

    @Override
    protected final void buildLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        enter();
        DeviceSteps.checkPairArrays(keys, values, n, keysSorted);
        if (n == 0) {
            layoutSorted(null, null, 0);
            return;
        }
        updateWithPairs(keys, values, n, keysSorted, batch -> {
            final int m = steps.checkSortAndDedupe(batch, batchValues.buffer(), n, keysSorted, true, null);
            trace("build sorted, deduped");
            layoutSorted(steps.dedupedKeys(), steps::dedupedValues, m);
        });
    }

    @Override
    protected final void upsertLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        enter();
        DeviceSteps.checkPairArrays(keys, values, n, keysSorted);
        if (n == 0) {
            return;
        }
        updateWithPairs(keys, values, n, keysSorted,
                batch -> upsertOnDevice(batch, batchValues.buffer(), n, keysSorted, true));
    }

    /**
     * Uploads a host batch of pairs into batchKeys and batchValues and runs {@code update} on the keys' buffer, whose
     * first step sorts and dedupes the batch ({@link DeviceSteps#checkSortAndDedupe}). A large batch ({@link
     * #UNSORTED_KEYS_FIRST_MIN}, {@link #SORTED_KEYS_FIRST_MIN}), where the copies can upload in the background,
     * sends its keys first and its values while the device works on the keys, so that work hides behind the values'
     * copy; the update returns only once the values have arrived, whatever failed.
     */
    private void updateWithPairs(long[] keys, long[] values, int n, boolean keysSorted,
                                 Consumer<DeviceBuffer> update) {
        if (n < (keysSorted ? SORTED_KEYS_FIRST_MIN : UNSORTED_KEYS_FIRST_MIN) || !copies.uploadsInBackground()) {
            update.accept(uploadBatch(keys, values, n));
            return;
        }
        final DeviceBuffer k = batchKeys.ensure(n * 8L);
        final DeviceBuffer v = batchValues.ensure(n * 8L);
        final HostArrayCopies.Arrival arrival = copies.uploadThenInBackground(keys, k.pointer(), values, v.pointer(),
                n);
        trace("upload keys, values under way " + n);
        steps.valuesArriving(arrival);
        try {
            update.accept(k);
        } catch (RuntimeException | Error e) {
            steps.valuesArriving(null);
            Waits.afterFailure(e, arrival::await);
            throw e;
        }
        steps.valuesArriving(null);
        arrival.await();
    }

    /**
     * {@link #upsert(long[], long[], int, boolean)} of pairs already on the device: times the device work alone
     * (sort, dedupe, merge). The batch is not modified; returns once the device is done.
     *
     * @throws IllegalArgumentException as the host overload, and where an array is on another device or shorter
     *                                  than {@code n}
     */
    @Override
    public final void upsert(DeviceLongs keys, DeviceLongs values, int n, boolean keysSorted) {
        onDevice(enterUpdate(), n, () -> DeviceLongs.checkArgs(n, device.ordinal, keys, "keys", values, "values"),
                () -> upsertOnDevice(keys.buffer(), values.buffer(), n, keysSorted, false));
    }

    @Override
    protected final void deleteLocked(long[] keys, int n, boolean keysSorted) {
        enter();
        DeviceSteps.checkKeyArray(keys, n, keysSorted);
        if (n == 0) {
            return;
        }
        deleteOnDevice(uploadBatch(keys, null, n), n, keysSorted, true);
    }

    /**
     * {@link #delete(long[], int, boolean)} of keys already on the device: times the device work alone. The batch
     * is not modified; returns once the device is done.
     *
     * @throws IllegalArgumentException as the host overload, and where the array is on another device or shorter
     *                                  than {@code n}
     */
    @Override
    public final void delete(DeviceLongs keys, int n, boolean keysSorted) {
        onDevice(enterUpdate(), n, () -> DeviceLongs.checkArgs(n, device.ordinal, keys, "keys"),
                () -> deleteOnDevice(keys.buffer(), n, keysSorted, false));
    }

    // -------------------------------------------------------------------------------------------------------------
    // Lookups

    @Override
    protected final void getLocked(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        enter();
        DeviceSteps.checkKeyArray(keys, n, keysSorted);
        BatchArgs.checkArray(valuesOut, "valuesOut", n);
        lookup(MODE_GET, keys, n, null, valuesOut, keysSorted);
    }

    @Override
    protected final void ceilingLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        orderedLookup(MODE_CEILING, keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    protected final void floorLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        orderedLookup(MODE_FLOOR, keys, n, keysOut, valuesOut, keysSorted);
    }

    /** Ceiling or floor: the arguments checked, then the lookup. */
    private void orderedLookup(int mode, long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        enter();
        DeviceSteps.checkKeyArray(keys, n, keysSorted);
        BatchArgs.checkAnswerArrays(keysOut, valuesOut, n);
        lookup(mode, keys, n, keysOut, valuesOut, keysSorted);
    }

    /**
     * {@link #get(long[], int, long[], boolean)} with the keys and the results on the device: times the device work
     * alone (the sort of an unsorted batch included). Returns once the device is done.
     *
     * @throws IllegalArgumentException as the host overload, and where an array is on another device or shorter
     *                                  than {@code n}
     */
    @Override
    public final void get(DeviceLongs keys, int n, DeviceLongs valuesOut, boolean keysSorted) {
        onDevice(enterLookup(), n, () -> DeviceLongs.checkArgs(n, device.ordinal, keys, "keys", valuesOut,
                "valuesOut"), () -> lookupOnDevice(MODE_GET, keys.buffer(), n, keysSorted, false, null,
                valuesOut.buffer()));
    }

    /**
     * {@link #ceiling(long[], int, long[], long[], boolean)} with the keys and the results on the device: times the
     * device work alone. Returns once the device is done.
     *
     * @throws IllegalArgumentException as the host overload, and where an array is on another device or shorter
     *                                  than {@code n}
     */
    @Override
    public final void ceiling(DeviceLongs keys, int n, DeviceLongs keysOut, DeviceLongs valuesOut,
                              boolean keysSorted) {
        onDevice(enterLookup(), n, () -> DeviceLongs.checkArgs(n, device.ordinal, keys, "keys", keysOut, "keysOut",
                valuesOut, "valuesOut"), () -> lookupOnDevice(MODE_CEILING, keys.buffer(), n, keysSorted, false,
                keysOut.buffer(), valuesOut.buffer()));
    }

    /**
     * A {@link DeviceLongs} call under the lock {@code held}: the context made current, the arguments checked,
     * nothing for an empty batch, else the device work and a wait for the device.
     */
    private void onDevice(Lock held, int n, Runnable checkArguments, Runnable work) {
        try {
            enter();
            checkArguments.run();
            if (n == 0) {
                return;
            }
            work.run();
            stream.synchronize();
        } finally {
            held.unlock();
        }
    }

    /**
     * A lookup of host arrays: a pipeline of chunks ({@link HostArrayCopies#lookup}), each looked up on the device on
     * its own (a chunk of a sorted batch is sorted; an unsorted chunk is sorted on the device as a whole batch
     * would be); a lookup that the structure answers one launch a chunk goes as one native pipeline instead, where
     * the copies can ({@link #pipelinedLookup}, {@link HostArrayCopies#pipelinedLookup}). The sort promise of a large
     * batch is checked by the device within each chunk and here across the seams between pieces, read once after the
     * last chunk where the structure can ({@link #armSortCheck}); a fault found in a chunk is worded for the whole
     * batch, as BatchArgs words it.
     */
    private void lookup(int mode, long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        if (n == 0) {
            return;
        }
        if (keysSorted) {
            checkSeams(keys, n);
        }
        final boolean hostChecked = n < DeviceSteps.DEVICE_CHECK_MIN;
        final DeviceBuffer queries = batchKeys.ensure(n * 8L);
        final DeviceBuffer valuesResult = outValues.ensure(n * 8L);
        final DeviceBuffer keysResult = keysOut == null ? null : outKeys.ensure(n * 8L);
        final PipelinedLookup pipelined = copies.pipelinesLookups()
                ? pipelinedLookup(mode, queries, keysResult, valuesResult) : null;
        final HostArrayCopies.ChunkWork work = (from, count) -> lookupOnDevice(mode,
                queries.view(from * 8, count * 8L), count, keysSorted, hostChecked,
                keysResult == null ? null : keysResult.view(from * 8, count * 8L),
                valuesResult.view(from * 8, count * 8L));
        final boolean checkOnce = keysSorted && !hostChecked && armSortCheck();
        try {
            lastLookupPipelined = pipelined != null && (checkOnce || !keysSorted || hostChecked);
            final boolean promiseBroken;
            if (lastLookupPipelined) {
                promiseBroken = copies.pipelinedLookup(keys, n, keysOut, valuesOut, pipelined, checkOnce);
            } else {
                if (keysOut == null) {
                    copies.lookup(keys, n, queries.pointer(), work, new CUdeviceptr[] {valuesResult.pointer()},
                            new long[][] {valuesOut});
                } else {
                    copies.lookup(keys, n, queries.pointer(), work,
                            new CUdeviceptr[] {valuesResult.pointer(), keysResult.pointer()},
                            new long[][] {valuesOut, keysOut});
                }
                promiseBroken = checkOnce && sortFaultFound();
            }
            if (promiseBroken) {
                throw new IllegalArgumentException("keys are not sorted as promised (keysSorted = true)");
            }
        } catch (IllegalArgumentException e) {
            BatchArgs.checkKeys(keys, n, keysSorted); // words the fault at its place in the whole batch
            throw e;
        } finally {
            if (checkOnce) {
                disarmSortCheck();
            }
        }
        trace((lastLookupPipelined ? "pipelined lookup " : "lookup pipeline ") + n);
    }

    /** Whether the last lookup of host arrays ran as one native pipeline ({@link HostArrayCopies#pipelinedLookup}). */
    boolean lastLookupPipelined() {
        return lastLookupPipelined;
    }

    /** A broken sort promise across the seams between the pieces of a large batch (the device checks within). */
    private static void checkSeams(long[] keys, int n) {
        for (long at = PinnedPieces.PIECE_LONGS; at < n; at += PinnedPieces.PIECE_LONGS) {
            if (keys[(int) at - 1] > keys[(int) at]) {
                BatchArgs.checkKeys(keys, n, true);
            }
        }
    }

    @Override
    protected final RangeResult rangeLocked(long[] lo, long[] hi, int n, int limitPerRange) {
        return rangeInto(lo, hi, n, limitPerRange, null, false);
    }

    @Override
    protected final RangeResult rangeLocked(long[] lo, long[] hi, int n, int limitPerRange, RangeResult reuse) {
        return rangeInto(lo, hi, n, limitPerRange, reuse, true);
    }

    /**
     * A count pass, a scan of the counts into CSR offsets, one small read (the total and where each group of ranges
     * starts), a fill pass a group; the pairs come back group by group and the offsets behind them, into the arrays
     * of {@code reuse} where they are large enough (a large result's new arrays cost more to allocate and zero than
     * to fill). {@code loop}: the caller reuses results (the overload
     * with {@code reuse}, null on a loop's first call), so new arrays get room for the next call.
     */
    private RangeResult rangeInto(long[] lo, long[] hi, int n, int limitPerRange, RangeResult reuse, boolean loop) {
        enter();
        // each range's ends are checked by the count pass (countRanges)
        BatchArgs.checkRangeArrays(lo, hi, n, limitPerRange);
        if (n == 0) {
            return new RangeResult(new int[1], new long[0], new long[0]);
        }
        beforeRanges();
        copies.uploadAll(new long[][] {lo, hi}, n,
                new CUdeviceptr[] {batchKeys.ensure(n * 8L).pointer(), batchValues.ensure(n * 8L).pointer()});
        trace("range upload " + n);
        final DeviceBuffer rangeCounts = counts.ensure((n + 1L) * Long.BYTES);
        countRanges(batchKeys.buffer(), batchValues.buffer(), n, limitPerRange, rangeCounts);
        trace("range count");
        final DeviceBuffer rangeOffsets = offsets.ensure((n + 1L) * Long.BYTES);
        steps.scanLong(rangeCounts, rangeOffsets, n + 1);
        // where the largest number of groups starts, and the total: one small read; the offsets come back behind it
        final long[] groupEnds = new long[RANGE_GROUPS + 1];
        kernels.rangeGroupEnds(rangeOffsets.pointer(), n, RANGE_GROUPS, rangeGroupEnds.ensure(groupEnds.length * 8L)
                .pointer());
        stream.read(rangeGroupEnds.pointer(), groupEnds, groupEnds.length);
        final long total = groupEnds[RANGE_GROUPS];
        if (total > Integer.MAX_VALUE - 8) {
            // a range out of order counts more pairs than a result holds
            BatchArgs.checkRangeOrder(lo, hi, n);
            throw new IllegalStateException("ranges hold " + total + " pairs, too many for one result: lower "
                    + "limitPerRange or split the batch");
        }
        final long[] keys = reuse != null && reuse.keys().length >= total ? reuse.keys()
                : new long[pairCapacity(total, n, limitPerRange, loop)];
        final long[] values = reuse != null && reuse.values().length >= total ? reuse.values()
                : new long[keys.length];
        trace("range total and arrays " + total);
        if (hostOffsets.length < n + 1) {
            hostOffsets = new long[n + 1];
        }
        final long[] longOffsets = hostOffsets;
        final int[] csr = reuse != null && reuse.offsets().length == n + 1 ? reuse.offsets() : new int[n + 1];
        final HostArrayCopies.Arrival offsetsArrival = copies.downloadInBackground(rangeOffsets.pointer(),
                longOffsets, n + 1);
        // many are narrowed on other threads while the pairs come back, once the offsets have
        final CompletableFuture<Void> narrowed = n < PARALLEL_NARROW_MIN ? null
                : CompletableFuture.runAsync(() -> {
                    offsetsArrival.await();
                    narrowOffsets(longOffsets, csr, n);
                });
        try {
            if (total > 0) {
                // the pairs are written a group of ranges at a time, each group's coming back while the next is
                // written
                final DeviceBuffer los = batchKeys.buffer();
                final DeviceBuffer his = batchValues.buffer();
                final DeviceBuffer keysOut = outKeys.ensure(total * 8);
                final DeviceBuffer valuesOut = outValues.ensure(total * 8);
                final int groups = Integer.highestOneBit((int) Math.max(1, Math.min(RANGE_GROUPS,
                        total / RANGE_GROUP_MIN_PAIRS)));
                final long[] starts = new long[groups + 1];
                final int[] first = new int[groups + 1];
                for (int g = 0; g <= groups; g++) {
                    // group g of `groups` begins where group g * (RANGE_GROUPS / groups) of RANGE_GROUPS does
                    first[g] = (int) ((long) n * g / groups);
                    starts[g] = groupEnds[g * (RANGE_GROUPS / groups)];
                }
                copies.produceAndDownload(starts, g -> {
                    final int from = first[g];
                    final int count = first[g + 1] - from;
                    if (count > 0) {
                        fillRanges(los.view(from * 8L, count * 8L), his.view(from * 8L, count * 8L), count,
                                limitPerRange, rangeCounts.view(from * 8L, (count + 1L) * 8),
                                rangeOffsets.view(from * 8L, (count + 1L) * 8), keysOut, valuesOut);
                    }
                }, new CUdeviceptr[] {keysOut.pointer(), valuesOut.pointer()}, new long[][] {keys, values});
                trace("range pairs in " + groups + " groups");
            }
        } catch (RuntimeException | Error e) {
            // never left writing into arrays a later call reuses
            Waits.afterFailure(e, () -> awaitOffsets(offsetsArrival, narrowed));
            throw e;
        }
        awaitOffsets(offsetsArrival, narrowed);
        if (narrowed == null) {
            narrowOffsets(longOffsets, csr, n);
        }
        trace("range offsets narrowed");
        return new RangeResult(csr, keys, values);
    }

    /**
     * The length of new result arrays for {@code total} pairs: exactly that for a caller that keeps its results;
     * for one that reuses them (a loop), an eighth more, at most what the ranges can hold, so that the next call,
     * which may find a few pairs more, reuses them.
     */
    private static int pairCapacity(long total, int n, int limitPerRange, boolean loop) {
        if (!loop) {
            return (int) total;
        }
        return (int) Math.min(Integer.MAX_VALUE - 8, Math.max(total, Math.min((long) n * limitPerRange,
                total + total / 8)));
    }

    /** Groups of ranges whose pairs are written and brought back in turn, at most (a power of two). */
    private static final int RANGE_GROUPS = 16;
    /**
     * Pairs a group of ranges holds at least (fewer pairs come back in one go): groups of a quarter of that cost a
     * call of a million pairs more in hand-overs than their overlap gains.
     */
    private static final long RANGE_GROUP_MIN_PAIRS = 1 << 20;
    /** Ranges from which their offsets are narrowed to ints on several threads. */
    private static final int PARALLEL_NARROW_MIN = 1 << 16;
    /** The range offsets as the device scans them (longs), reused between calls. */
    private long[] hostOffsets = new long[0];

    /** {@code csr[0, n]} = the offsets as ints, on several threads from {@link #PARALLEL_NARROW_MIN} ranges. */
    private static void narrowOffsets(long[] offsets, int[] csr, int n) {
        final IntStream all = IntStream.rangeClosed(0, n);
        (n < PARALLEL_NARROW_MIN ? all : all.parallel()).forEach(i -> csr[i] = (int) offsets[i]);
    }

    /**
     * Waits for a range call's offsets: their copy, and their narrowing where it runs on other threads (not null);
     * throws a failure of either as it was.
     */
    private static void awaitOffsets(HostArrayCopies.Arrival copy, CompletableFuture<Void> narrowed) {
        if (narrowed == null) {
            copy.await();
        } else {
            Waits.join(narrowed);
        }
    }

    @Override
    protected final int exportFromLocked(long fromKey, long[] keysOut, long[] valuesOut) {
        enter();
        BatchArgs.checkExport(keysOut, valuesOut);
        if (keysOut.length == 0 || keyCount() == 0) {
            return 0;
        }
        return exportFromDevice(fromKey, keysOut, valuesOut);
    }

    // -------------------------------------------------------------------------------------------------------------
    // Shape

    @Override
    protected final long sizeLocked() {
        enter();
        return keyCount();
    }

    /**
     * Device bytes of reusable batch scratch held between calls (sorted copies of the last large batch, CUB's
     * temporary storage, lookup results): not part of {@link io.flix.index.IndexStats#bytes()}, which is the
     * structure alone.
     */
    @Override
    public final long scratchBytes() {
        final Lock held = enterLookup();
        try {
            enter();
            long bytes = counters.bytes() + steps.scratchBytes() + structureScratchBytes();
            for (Scratch s : scratches) {
                bytes += s.bytes();
            }
            return bytes;
        } finally {
            held.unlock();
        }
    }

    @Override
    public final int deviceOrdinal() {
        return device.ordinal;
    }

    /** The process-wide context of this index's device, shared by every index open on it (for tests). */
    final GpuRuntime.DeviceContext deviceContext() {
        return device;
    }

    /** Frees the device memory and the pinned staging memory; the host objects left are a few small handles. */
    @Override
    protected final void closeLocked() {
        device.makeCurrent();
        // once nothing in flight can reach this index's memory, what it frees is kept for the next index
        cuCtxSynchronize();
        memory.end();
        releaseStructure();
        releaseHost();
    }

    /** Frees what this class holds: scratch, batch steps, staging, counters and the stream. */
    final void releaseHost() {
        stream.synchronize();
        for (Scratch s : scratches) {
            s.close();
        }
        steps.close();
        copies.close();
        counters.close();
        stream.close();
        hostOffsets = new long[0];
        memory.releasePutOff(); // a constructor that failed has not ended the account
    }

    // -------------------------------------------------------------------------------------------------------------
    // Context, copies, tracing

    /** Makes the device's context current on the calling thread; first in every call (the lock is held). */
    void enter() {
        device.makeCurrent();
    }

    /** Called with each step's name after it is issued (profiling); does nothing unless the structure traces. */
    void trace(String step) {
    }

    // Host<->device copies (HostArrayCopies): straight from the heap, or through pinned staging.

    /** Uploads a batch into batchKeys (and batchValues where values != null); returns batchKeys. */
    final DeviceBuffer uploadBatch(long[] keys, long[] values, int n) {
        final DeviceBuffer k = batchKeys.ensure(n * 8L);
        if (values == null) {
            copies.upload(keys, n, k.pointer());
        } else {
            copies.uploadAll(new long[][] {keys, values}, n,
                    new CUdeviceptr[] {k.pointer(), batchValues.ensure(n * 8L).pointer()});
        }
        trace("upload " + n);
        return k;
    }

    final void download(CUdeviceptr src, long[] dst, int n) {
        copies.download(src, dst, n);
        trace("download " + n);
    }
}
