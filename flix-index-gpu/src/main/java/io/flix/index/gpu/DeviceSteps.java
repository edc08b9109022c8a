package io.flix.index.gpu;

import static io.flix.index.gpu.DeviceBuffer.pointerOf;
import static io.flix.index.gpu.KernelContract.STEP_COUNTER_SLOTS;
import static io.flix.index.gpu.KernelContract.STEP_DEDUPED_PAIRS;
import static io.flix.index.gpu.KernelContract.STEP_FIRST_RESERVED;
import static io.flix.index.gpu.KernelContract.STEP_FIRST_UNSORTED;
import static io.flix.index.gpu.KernelContract.STEP_KEY_SPREAD;
import static io.flix.index.gpu.KernelContract.STEP_LONG_DIGIT_RUNS;
import static io.flix.index.gpu.KernelContract.STEP_RUNS;

import io.flix.index.BatchArgs;

import java.util.function.Consumer;

import jcuda.driver.CUdeviceptr;


/**
 * The device steps that the GPU structures share: small reads; CUB's sorts and scans with one scratch buffer; and
 * the batch work every structure does the same way (the device checks of a batch, the sort of an unsorted batch,
 * the reduction of a pair batch to the last occurrence of each key), on the kernels of {@code flix_kernels.cu}.
 * Owns the scratch those need; one per structure, used from the thread that holds it.
 */
final class DeviceSteps implements AutoCloseable {

    /** Batches at least this large are checked on the device after the upload instead of on the host. */
    static final int DEVICE_CHECK_MIN = 1 << 16;

    private final FlixKernels kernels;
    /** The kernels' stream: the CUB calls, copies and reads here run on it too. */
    private final DeviceStream stream;
    private final Consumer<String> trace;
    private final DeviceCounters stepCounters;

    private final Scratch cubScratch;
    private final Scratch sortedKeys;
    private final Scratch sortedValues;
    private final Scratch identity;
    private final Scratch positions;
    private final Scratch runFlags;
    private final Scratch runPositions;
    private final Scratch dedupedKeys;
    private final Scratch dedupedValues;
    private final Scratch[] scratches;
    /**
     * Waits for the values of the batch being updated, still crossing the bus ({@link #valuesArriving}); null where
     * they are on the device.
     */
    private HostArrayCopies.Arrival valuesArrival;
    /**
     * The values of the last {@link #checkSortAndDedupe}'s batch where they were still crossing the bus: put in
     * the keys' order by the first {@link #dedupedValues()}; null where they are in order already.
     */
    private PendingValues pendingValues;

    /**
     * A batch whose keys are sorted and deduplicated and whose values are not yet: the batch as the caller gave it
     * ({@code keys}, {@code values}), the sort's positions ({@code perm}: null where the batch order is the sorted
     * order, the keys' own or the caller's promise), whether the values are checked for the reserved one, the runs
     * of equal keys, and the wait for the values' arrival.
     */
    private record PendingValues(DeviceBuffer keys, DeviceBuffer values, CUdeviceptr perm, int n,
                                 boolean checkValues, int runs, HostArrayCopies.Arrival arrival) {
    }

    /**
     * @param memory where the scratch is reserved (the index's account)
     * @param trace  called with each step's name after it is issued (profiling; may do nothing)
     */
    DeviceSteps(FlixKernels kernels, DeviceMemoryLedger.Account memory, Consumer<String> trace) {
        this.kernels = kernels;
        this.stream = kernels.stream();
        this.trace = trace;
        this.cubScratch = new Scratch(memory, "sort and scan scratch");
        this.sortedKeys = new Scratch(memory, "sorted keys");
        this.sortedValues = new Scratch(memory, "sorted values");
        this.identity = new Scratch(memory, "batch positions");
        this.positions = new Scratch(memory, "sorted positions");
        this.runFlags = new Scratch(memory, "run flags");
        this.runPositions = new Scratch(memory, "run positions");
        this.dedupedKeys = new Scratch(memory, "deduplicated keys");
        this.dedupedValues = new Scratch(memory, "deduplicated values");
        this.scratches = new Scratch[] {cubScratch, sortedKeys, sortedValues, identity, positions, runFlags,
            runPositions, dedupedKeys, dedupedValues};
        this.stepCounters = new DeviceCounters(memory, STEP_COUNTER_SLOTS, "batch step counters", stream);
    }

    // ---------------------------------------------------------------------------------------------------------
    // Reads

    long readLong(DeviceBuffer buffer, long index) {
        final long[] one = new long[1];
        stream.read(buffer.at(index * 8), one, 1);
        return one[0];
    }

    long readInt(DeviceBuffer buffer, long index) {
        return stream.readInt(buffer.at(index * 4));
    }

    // ---------------------------------------------------------------------------------------------------------
    // CUB

    void scanInt(DeviceBuffer in, DeviceBuffer out, int n) {
        final long bytes = CubNative.checkBytes(CubNative.scanIntScratchBytes(n), "scan scratch size");
        CubNative.check(CubNative.scanInt(cubScratch.ensure(bytes).address(), bytes, in.address(), out.address(), n,
                stream.address()), "scan");
        trace.accept("CUB scan " + n);
    }

    void scanLong(DeviceBuffer in, DeviceBuffer out, int n) {
        final long bytes = CubNative.checkBytes(CubNative.scanLongScratchBytes(n), "scan scratch size");
        CubNative.check(CubNative.scanLong(cubScratch.ensure(bytes).address(), bytes, in.address(), out.address(),
                n, stream.address()), "scan");
        trace.accept("CUB scan " + n);
    }

    /** Sorts {@code keys[0, n)} into {@link #sortedKeys()}. */
    void sortKeys(DeviceBuffer keys, int n) {
        sortBatch(keys, null, false, n, null, null);
    }

    /**
     * Sorts a batch, stably, into {@link #sortedKeys()} (and its values, where not null, into the sorted values)
     * ({@link #digitSort}); returns the number of runs of equal keys (0 where flags is null). {@code checkValues}:
     * the pass that finds the varying bits also checks the values for the reserved one (and reports it).
     * {@code whileSorting} (may be null) runs on the host while the device sorts.
     */
    private int sortBatch(DeviceBuffer keys, DeviceBuffer values, boolean checkValues, int n, DeviceBuffer flags,
                          Runnable whileSorting) {
        final int[] bits = varyingBitsOrReport(keys, checkValues ? values : null, n, digitSortBits(n));
        return digitSort(n, bits, flags, new SortPasses() {
            @Override
            public void asIs() {
                stream.copy(sortedKeys.ensure(n * 8L).pointer(), keys.pointer(), n * 8L);
                if (values != null) {
                    stream.copy(sortedValues.ensure(n * 8L).pointer(), values.pointer(), n * 8L);
                }
            }

            @Override
            public void byBits(int beginBit, int endBit) {
                cubSort(keys, values, n, beginBit, endBit);
            }

            @Override
            public void withinDigits(int beginBit, CUdeviceptr flagsOrNull, CUdeviceptr runs, CUdeviceptr longRuns) {
                kernels.sortWithinDigits(sortedKeys.pointer(), values == null ? null : sortedValues.pointer(), n,
                        beginBit, flagsOrNull, runs, longRuns);
            }
        }, whileSorting);
    }

    /** The passes of one stable sort into {@link #sortedKeys()}, with what travels beside the keys. */
    private interface SortPasses {
        /** The batch as it is: its keys are all equal. */
        void asIs();

        /** CUB's sort by key bits {@code [beginBit, endBit)}. */
        void byBits(int beginBit, int endBit);

        /** sort_within_digits: the runs of keys equal from {@code beginBit} up, sorted within. */
        void withinDigits(int beginBit, CUdeviceptr flagsOrNull, CUdeviceptr runs, CUdeviceptr longRuns);
    }

    /**
     * The sort of a batch whose top varying bits are {@code bits} ({@link #varyingBitsOrReport}; null: one key
     * repeated, the batch order is the sorted order): CUB sorts it by those bits only, a few more than log2(n)
     * (half the passes of a full sort for random 64-bit keys), and {@code sort_within_digits} finishes the short
     * runs of keys equal in those bits. Where keys cluster below those bits, a full sort follows. {@code flags}
     * (where not null) then marks the last of each run of equal keys; returns the number of such runs (0 where
     * flags is null). {@code whileSorting} (may be null) runs on the host while the device sorts.
     */
    private int digitSort(int n, int[] bits, DeviceBuffer flags, SortPasses passes, Runnable whileSorting) {
        if (bits == null) {
            passes.asIs();
        } else {
            passes.byBits(bits[0], bits[1]);
            if (bits[0] > 0) {
                stepCounters.zero(STEP_RUNS, STEP_LONG_DIGIT_RUNS + 1);
                passes.withinDigits(bits[0], pointerOf(flags), stepCounters.at(STEP_RUNS),
                        stepCounters.at(STEP_LONG_DIGIT_RUNS));
                // both passes are queued: the host's work hides behind them, up to the read of their counters
                run(whileSorting);
                final long[] found = stepCounters.read(STEP_RUNS, STEP_LONG_DIGIT_RUNS + 1);
                if ((int) found[STEP_LONG_DIGIT_RUNS] == 0) {
                    return (int) found[STEP_RUNS];
                }
                passes.byBits(0, 64);
                return flags == null ? 0 : flagLastOfRuns(sortedKeys.buffer(), n, flags);
            }
        }
        run(whileSorting);
        return flags == null ? 0 : flagLastOfRuns(sortedKeys.buffer(), n, flags);
    }

    /**
     * Says that the values of the next batch that {@link #checkSortAndDedupe} takes are still crossing the bus, and
     * how to wait for them ({@code arrival}; null: they are on the device). That call then does its work on the
     * keys meanwhile: the sort of an unsorted batch with its positions ({@link #sortKeysWhileValuesArrive}), the
     * check and the runs of a sorted one.
     */
    void valuesArriving(HostArrayCopies.Arrival arrival) {
        valuesArrival = arrival;
        pendingValues = null;
    }

    /**
     * {@link #sortBatch} for a batch whose values are still crossing the bus: the keys are sorted with their batch
     * positions (stable) while the values arrive ({@link #digitSort}), and the last of each run of equal keys is
     * flagged; returns the runs. The values are left pending ({@link #putValuesInOrder}), so that the caller's steps
     * on the keys alone also run while they cross.
     */
    private int sortKeysWhileValuesArrive(DeviceBuffer keys, DeviceBuffer values, boolean checkValues, int n,
                                          DeviceBuffer flags, HostArrayCopies.Arrival arrival,
                                          Runnable whileSorting) {
        final int[] bits = topVaryingBits(keys, n, digitSortBits(n));
        final int runs = digitSort(n, bits, flags, new SortPasses() {
            @Override
            public void asIs() {
                stream.copy(sortedKeys.ensure(n * 8L).pointer(), keys.pointer(), n * 8L);
            }

            @Override
            public void byBits(int beginBit, int endBit) {
                sortWithPositions(keys, n, beginBit, endBit);
            }

            @Override
            public void withinDigits(int beginBit, CUdeviceptr flagsOrNull, CUdeviceptr runCount,
                                     CUdeviceptr longRuns) {
                kernels.sortWithinDigitsPositions(sortedKeys.pointer(), positions.pointer(), n, beginBit, flagsOrNull,
                        runCount, longRuns);
            }
        }, () -> {
            sortedValues.ensure(n * 8L);
            run(whileSorting);
        });
        trace.accept("runs flagged");
        // one key repeated: the batch order is the sorted order
        pendingValues = new PendingValues(keys, values, bits == null ? null : positions.pointer(), n, checkValues,
                runs, arrival);
        return runs;
    }

    /**
     * Waits for pending values to arrive, and gather_values puts them in the keys' order (values in order already
     * stay where they are): the parts of the copy that have landed in one pass, then the others as they land, so
     * that little is left once the last has (a pass reads all of the positions: parts landed together go together).
     * The values are checked for the reserved one where asked (reported before the caller changes anything with
     * them), and the last value of each run of equal keys is kept, beside its key, where the batch had duplicates.
     */
    private void putValuesInOrder(PendingValues p) {
        final boolean inOrder = p.perm() == null;
        if (p.checkValues()) {
            stepCounters.fillInts(STEP_FIRST_RESERVED, STEP_FIRST_RESERVED + 1, Integer.MAX_VALUE);
        }
        final HostArrayCopies.Arrival arrival = p.arrival();
        int from = 0;
        for (int k = 0; k < arrival.parts(); k++) {
            arrival.awaitPart(k);
            while (k + 1 < arrival.parts() && arrival.partArrived(k + 1)) {
                k++;
                arrival.awaitPart(k); // its failure, if it failed
            }
            final int to = (int) arrival.partEnd(k, p.n());
            if (!inOrder) {
                kernels.gatherValues(p.values().pointer(), p.perm(), p.n(), from, to, sortedValues.pointer(),
                        p.checkValues() ? stepCounters.at(STEP_FIRST_RESERVED) : null);
            } else if (p.checkValues()) {
                // a fault's place is found again on the host: the part's own positions serve as a mark
                kernels.checkBatch(p.values().at(from * 8L), p.values().at(from * 8L), to - from, 0,
                        stepCounters.at(STEP_FIRST_RESERVED), null);
            }
            from = to;
        }
        arrival.await();
        trace.accept("values arrived");
        if (p.checkValues() && stepCounters.readInt(STEP_FIRST_RESERVED) != Integer.MAX_VALUE) {
            DeviceBatchFaults.report(p.keys(), p.values(), p.n(), inOrder);
        }
        if (p.runs() < p.n()) {
            // the keys are compacted already; the same flags and positions place their values
            kernels.compactFlagged(inOrder ? p.keys().pointer() : sortedKeys.pointer(),
                    inOrder ? p.values().pointer() : sortedValues.pointer(), runFlags.pointer(),
                    runPositions.pointer(), p.n(), dedupedKeys.pointer(), dedupedValues.pointer(),
                    stepCounters.at(STEP_DEDUPED_PAIRS));
        }
    }

    /**
     * Bits of the sort before sort_within_digits: log2(n) + 4 rounded up to CUB's 8-bit digit passes, so that
     * uniform keys share those bits with a sixteenth of a key on average, and keys 30 times denser than uniform
     * in places (skewed batches) with about two.
     */
    private static int digitSortBits(int n) {
        final int log2 = 32 - Integer.numberOfLeadingZeros(Math.max(1, n - 1));
        return Math.min(64, (log2 + 4 + 7) / 8 * 8);
    }

    /** CUB's sort of keys (with values, where not null) by key bits [beginBit, endBit), stable. */
    private void cubSort(DeviceBuffer keys, DeviceBuffer values, int n, int beginBit, int endBit) {
        if (values == null) {
            final long bytes = CubNative.checkBytes(CubNative.sortKeysScratchBytes(n), "sort scratch size");
            CubNative.check(CubNative.sortKeys(cubScratch.ensure(bytes).address(), bytes, keys.address(),
                    sortedKeys.ensure(n * 8L).address(), n, beginBit, endBit, stream.address()), "key sort");
            trace.accept("CUB sort keys " + n + " bits " + beginBit + ".." + endBit);
        } else {
            final long bytes = CubNative.checkBytes(CubNative.sortWidePairsScratchBytes(n), "sort scratch size");
            CubNative.check(CubNative.sortWidePairs(cubScratch.ensure(bytes).address(), bytes, keys.address(),
                    sortedKeys.ensure(n * 8L).address(), values.address(), sortedValues.ensure(n * 8L).address(),
                    n, beginBit, endBit, stream.address()), "pair sort");
            trace.accept("CUB sort key-value pairs " + n + " bits " + beginBit + ".." + endBit);
        }
    }

    /** flags[i] = 1 where sorted keys[i] is the last of its run of equal keys; returns the runs. */
    private int flagLastOfRuns(DeviceBuffer keys, int n, DeviceBuffer flags) {
        return checkAndFlagSortedRuns(keys, null, n, flags, false, null, null);
    }

    /**
     * flagLastOfRuns for a batch promised sorted, with the device checks in the same wait where {@code check}: the
     * promise (in the flag pass) and the values (where not null) for the reserved one. {@code whileFlagging} (may
     * be null) runs on the host meanwhile. A fault is worded for the whole batch, its values waited for first
     * where they are still crossing ({@code arrival}, null where they are on the device).
     */
    private int checkAndFlagSortedRuns(DeviceBuffer keys, DeviceBuffer values, int n, DeviceBuffer flags,
                                       boolean check, HostArrayCopies.Arrival arrival,
                                       Runnable whileFlagging) {
        stepCounters.zero(STEP_RUNS, STEP_RUNS + 1);
        if (check) {
            stepCounters.fillInts(STEP_FIRST_RESERVED, STEP_FIRST_UNSORTED + 1, Integer.MAX_VALUE);
            if (arrival == null && values != null) {
                kernels.checkBatch(keys.pointer(), values.pointer(), n, 0, stepCounters.at(STEP_FIRST_RESERVED),
                        null);
            }
        }
        kernels.flagLastOfRun(keys.pointer(), n, flags.pointer(), stepCounters.at(STEP_RUNS),
                check ? stepCounters.at(STEP_FIRST_UNSORTED) : null);
        run(whileFlagging);
        if (!check) {
            return stepCounters.readInt(STEP_RUNS);
        }
        final long[] found = stepCounters.read(STEP_FIRST_RESERVED, STEP_RUNS + 1);
        if ((int) found[STEP_FIRST_RESERVED] != Integer.MAX_VALUE
                || (int) found[STEP_FIRST_UNSORTED] != Integer.MAX_VALUE) {
            if (arrival != null) {
                arrival.await();
            }
            DeviceBatchFaults.report(keys, values, n, true);
        }
        return (int) found[STEP_RUNS];
    }

    /**
     * Sorts {@code keys[0, n)} by their bits {@code [beginBit, endBit)} (0 and 64: a full sort) into
     * {@link #sortedKeys()}, each key's batch position into {@link #positions()}. Stable.
     */
    void sortWithPositions(DeviceBuffer keys, int n, int beginBit, int endBit) {
        final DeviceBuffer iota = identity.ensure(n * 4L);
        kernels.iotaU32(iota.pointer(), n);
        final long bytes = CubNative.checkBytes(CubNative.sortPairsScratchBytes(n), "sort scratch size");
        CubNative.check(CubNative.sortPairs(cubScratch.ensure(bytes).address(), bytes, keys.address(),
                sortedKeys.ensure(n * 8L).address(), iota.address(), positions.ensure(n * 4L).address(), n,
                beginBit, endBit, stream.address()), "pair sort");
        trace.accept("CUB sort pairs " + n + " bits " + beginBit + ".." + endBit);
    }

    private static void run(Runnable task) {
        if (task != null) {
            task.run();
        }
    }

    /**
     * The lowest bit from which a locality sort of {@code keys[0, n)} orders them by their top {@code bits}
     * varying bits, and the bit above the highest in which any two of them differ: {@code {begin, end}}, or null
     * where all keys are equal (nothing to sort).
     */
    int[] topVaryingBits(DeviceBuffer keys, int n, int bits) {
        return varyingBitsOrReport(keys, null, n, bits);
    }

    /** topVaryingBits, checking {@code values} (where not null) in the same pass: a reserved one is reported. */
    private int[] varyingBitsOrReport(DeviceBuffer keys, DeviceBuffer values, int n, int bits) {
        stepCounters.zero(STEP_KEY_SPREAD, STEP_KEY_SPREAD + 1);
        stepCounters.fillInts(STEP_FIRST_RESERVED, STEP_FIRST_RESERVED + 1, Integer.MAX_VALUE);
        kernels.keySpread(keys.pointer(), pointerOf(values), n, stepCounters.at(STEP_KEY_SPREAD),
                stepCounters.at(STEP_FIRST_RESERVED));
        final long[] found = stepCounters.read(STEP_KEY_SPREAD, STEP_FIRST_RESERVED + 1);
        if ((int) found[STEP_FIRST_RESERVED] != Integer.MAX_VALUE) {
            DeviceBatchFaults.report(keys, values, n, false);
        }
        final long spread = found[STEP_KEY_SPREAD];
        if (spread == 0) {
            return null;
        }
        final int end = 64 - Long.numberOfLeadingZeros(spread);
        return new int[] {Math.max(0, end - bits), end};
    }

    DeviceBuffer sortedKeys() {
        return sortedKeys.buffer();
    }

    DeviceBuffer positions() {
        return positions.buffer();
    }

    // ---------------------------------------------------------------------------------------------------------
    // Batch preparation

    /**
     * Checks a batch of pairs on the device (as {@link #checkOnDevice}), sorts it (unless {@code keysSorted}) and
     * reduces it to the last occurrence of each key, into {@link #dedupedKeys()} and {@link #dedupedValues()};
     * returns the count. The batch itself is only read. The sort is stable ({@link #sortBatch}), so equal keys keep
     * their batch order and the last one wins. An unsorted batch's values are checked in the sort's first pass, or,
     * where they are still crossing the bus, when {@link #dedupedValues()} first puts them in order; a fault is
     * reported before anything that the caller owns has changed. {@code whileSorting} (may be null) runs on the
     * host while the device sorts.
     */
    int checkSortAndDedupe(DeviceBuffer keys, DeviceBuffer values, int n, boolean keysSorted, boolean hostChecked,
                           Runnable whileSorting) {
        pendingValues = null;
        DeviceBuffer k = keys;
        DeviceBuffer v = values;
        final DeviceBuffer flags = runFlags.ensure(n * 4L);
        final int runs;
        if (keysSorted) {
            final HostArrayCopies.Arrival arrival = valuesArrival;
            valuesArrival = null;
            final boolean check = deviceChecks(n, hostChecked);
            runs = checkAndFlagSortedRuns(keys, values, n, flags, check, arrival, whileSorting);
            if (arrival != null) {
                pendingValues = new PendingValues(keys, values, null, n, check, runs, arrival);
            }
        } else if (valuesArrival != null) {
            final HostArrayCopies.Arrival arrival = valuesArrival;
            valuesArrival = null;
            runs = sortKeysWhileValuesArrive(keys, values, deviceChecks(n, hostChecked), n, flags, arrival,
                    whileSorting);
            k = sortedKeys.buffer();
            v = sortedValues.buffer();
        } else {
            runs = sortBatch(keys, values, deviceChecks(n, hostChecked), n, flags, whileSorting);
            k = sortedKeys.buffer();
            v = sortedValues.buffer();
        }
        if (runs == n) {
            // no duplicates (the common case): the sorted batch is the result
            dedupedKeyBuffer = k;
            dedupedValueBuffer = v;
            return n;
        }
        final DeviceBuffer at = runPositions.ensure(n * 4L);
        scanInt(flags, at, n);
        // values still to arrive: the keys alone now (written twice, the second copy a placeholder for the values)
        kernels.compactFlagged(k.pointer(), pendingValues == null ? v.pointer() : k.pointer(), flags.pointer(),
                at.pointer(), n, dedupedKeys.ensure(runs * 8L).pointer(), dedupedValues.ensure(runs * 8L).pointer(),
                stepCounters.at(STEP_DEDUPED_PAIRS));
        dedupedKeyBuffer = dedupedKeys.buffer();
        dedupedValueBuffer = dedupedValues.buffer();
        return runs;
    }

    private DeviceBuffer dedupedKeyBuffer;
    private DeviceBuffer dedupedValueBuffer;

    /** The keys of the last {@link #checkSortAndDedupe}: the caller's batch, sorted scratch or compacted scratch. */
    DeviceBuffer dedupedKeys() {
        return dedupedKeyBuffer;
    }

    /**
     * The values of the last {@link #checkSortAndDedupe}, beside {@link #dedupedKeys()}. Where they were still
     * crossing the bus, the first call waits for them and puts them in order, and reports a reserved value among
     * them: the caller takes them only once its steps on the keys alone are issued, and changes nothing before.
     */
    DeviceBuffer dedupedValues() {
        if (pendingValues != null) {
            final PendingValues p = pendingValues;
            pendingValues = null;
            putValuesInOrder(p);
        }
        return dedupedValueBuffer;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Argument checks. BatchArgs decides what is valid and words every failure; large batches are scanned for
    // reserved values and broken sort promises on the device after the upload (a host pass over 2^24 keys costs
    // about 20 ms), and only where that finds a fault does BatchArgs repeat the check on a host copy to word it.

    /** The host half of a pair batch's checks: all of them for small batches, the arrays alone for large ones. */
    static void checkPairArrays(long[] keys, long[] values, int n, boolean keysSorted) {
        if (n < DEVICE_CHECK_MIN) {
            BatchArgs.checkPairs(keys, values, n, keysSorted);
        } else {
            BatchArgs.checkArray(keys, "keys", n);
            BatchArgs.checkArray(values, "values", n);
        }
    }

    /** The host half of a key batch's checks. */
    static void checkKeyArray(long[] keys, int n, boolean keysSorted) {
        if (n < DEVICE_CHECK_MIN) {
            BatchArgs.checkKeys(keys, n, keysSorted);
        } else {
            BatchArgs.checkArray(keys, "keys", n);
        }
    }

    /**
     * The device half of a key batch's checks (deletes, lookups): a broken sort promise (pair batches are checked
     * by {@link #checkSortAndDedupe}). Where the host has checked already ({@code hostChecked}), small batches are
     * not checked again. A fault found here is worded by BatchArgs on a host copy of the batch (a rare path).
     */
    void checkOnDevice(DeviceBuffer keys, int n, boolean keysSorted, boolean hostChecked) {
        if (!deviceChecks(n, hostChecked) || !keysSorted) {
            return;
        }
        stepCounters.fillInts(STEP_FIRST_UNSORTED, STEP_FIRST_UNSORTED + 1, Integer.MAX_VALUE);
        kernels.checkBatch(keys.pointer(), null, n, 1, null, stepCounters.at(STEP_FIRST_UNSORTED));
        if (stepCounters.readInt(STEP_FIRST_UNSORTED) != Integer.MAX_VALUE) {
            DeviceBatchFaults.report(keys, null, n, true);
        }
    }

    /** Whether a batch of n is checked on the device: where the host has not, or it is too large for the host. */
    private static boolean deviceChecks(int n, boolean hostChecked) {
        return !hostChecked || n >= DEVICE_CHECK_MIN;
    }

    /** Device bytes of the scratch held. */
    long scratchBytes() {
        long bytes = stepCounters.bytes();
        for (Scratch s : scratches) {
            bytes += s.bytes();
        }
        return bytes;
    }

    @Override
    public void close() {
        for (Scratch s : scratches) {
            s.close();
        }
        stepCounters.close();
    }
}
