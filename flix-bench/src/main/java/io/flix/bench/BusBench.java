package io.flix.bench;

import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;
import io.flix.index.batch.BatchResults;
import io.flix.index.batch.MicroBatchEngine;
import io.flix.index.batch.OperationBatch;
import io.flix.index.gpu.GpuSupport;
import io.flix.index.gpu.PinnedCopyRate;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;
import java.util.stream.IntStream;

/**
 * The end-to-end calls of a FliX index (Java arrays in and out) against the host-device bus, and the latency of the
 * calls at the operator's micro-batch sizes. Two sections of the Bench run:
 * <ul>
 *   <li>{@code bus}: for each size, build (unsorted pairs into a new index), restore (sorted pairs, the keysSorted
 *       build of an export, into a new index), rebuild (the unsorted build into the same index again),
 *       sorted and unsorted gets, floors of a sorted batch and ceilings of an unsorted one, an unsorted upsert and
 *       range lookups of 16 keys (size / 16 of them, each call reusing the last call's result arrays), medians over
 *       several calls. On the GPU each row carries the bus bound: the least time
 *       the bytes the call moves each way take at the pinned copy rates measured in the same run
 *       ({@link PinnedCopyRate}), the two directions overlapped.</li>
 *   <li>{@code latency}: per micro-batch size, the median time of one call and keys a second, for gets and upserts
 *       (sorted and unsorted), floors of a sorted batch and ceilings of an unsorted one, and for batches through the
 *       {@link MicroBatchEngine} both ways it can send them ({@link MicroBatchEngine.Sorting}): gets only, floors
 *       only, and gets with an upsert every {@link #MIXED_UPSERT_EVERY} operations.</li>
 * </ul>
 * Every answer is checked; a wrong one fails the run.
 */
final class BusBench {

    static final String CSV_HEADER = "structure,backend,device,section,operation,keys,calls,median_ms,keys_per_sec,"
            + "bytes_in,bytes_out,bus_bound_ms";
    static final List<String> BUS_OPERATIONS = List.of("build", "restore", "rebuild", "get_sorted", "get_unsorted",
            "floor_sorted", "ceiling_unsorted", "upsert", "range");
    static final List<String> LATENCY_OPERATIONS = List.of("get_sorted", "get_unsorted", "floor_sorted",
            "ceiling_unsorted", "upsert_sorted", "upsert_unsorted", "engine_get_host_sort", "engine_get_index_sort",
            "engine_floor_host_sort", "engine_floor_index_sort", "engine_mixed_host_sort", "engine_mixed_index_sort");
    /** Keys each range spans. */
    static final int RANGE_KEYS = 16;
    /** A mixed engine batch's share of upserts: one operation in this many. */
    static final int MIXED_UPSERT_EVERY = 8;
    /** Bytes copied each way to measure the bus. */
    private static final long PROBE_BYTES = 256L << 20;

    /** One measured row. */
    record Row(String label, String backend, String device, String section, String operation, int keys, int calls,
               double medianMs, long bytesIn, long bytesOut, double boundMs) {

        /**
         * Milliseconds to four significant digits, plain: a small batch's bound is nanoseconds, which four decimals
         * of a millisecond would write as 0.0000.
         */
        static String significant(double ms) {
            if (!Double.isFinite(ms)) {
                return Double.toString(ms);
            }
            return new java.math.BigDecimal(ms).round(new java.math.MathContext(4)).stripTrailingZeros()
                    .toPlainString();
        }

        double keysPerSec() {
            return keys / (medianMs / 1e3);
        }

        String csv() {
            return String.join(",", label, backend, Bench.csvField(device), section, operation, Integer.toString(keys),
                    Integer.toString(calls), String.format(Locale.ROOT, "%.4f", medianMs),
                    String.format(Locale.ROOT, "%.0f", keysPerSec()), Long.toString(bytesIn),
                    Long.toString(bytesOut), Double.isNaN(boundMs) ? "" : significant(boundMs));
        }
    }

    private final List<Row> rows = new ArrayList<>();
    private PinnedCopyRate.Rates rates;
    private final long seed;
    private final int warmUpCalls;
    /** False during the JVM's warm-up passes: rows are made and checked, not recorded. */
    private boolean reporting = true;

    /** @param warmUpCalls a row's unreported calls at most ({@link #WARM_UP_CALLS}; at least one is made) */
    BusBench(long seed, int warmUpCalls) {
        this.seed = seed;
        this.warmUpCalls = warmUpCalls;
    }

    List<Row> rows() {
        return rows;
    }

    /** The pinned copy rates, measured once (GPU runs only). */
    PinnedCopyRate.Rates measureBus() {
        if (rates == null) {
            rates = PinnedCopyRate.measure(0, PROBE_BYTES, 7);
            System.out.printf(Locale.ROOT, "bus: pinned host to device %.1f GB/s, device to host %.1f GB/s; both at"
                    + " once %.1f and %.1f GB/s%n", rates.hostToDevice(), rates.deviceToHost(),
                    rates.duplexHostToDevice(), rates.duplexDeviceToHost());
        }
        return rates;
    }

    // ---------------------------------------------------------------------------------------------------------------
    // bus

    /**
     * Runs the size sweep on indexes that {@code open} makes; {@code gpu}: rows carry the bus bound. Unless the
     * warm-up is off ({@code --quick}), the first size's rows run unreported until {@link #JVM_WARM_UP_NANOS} have
     * passed: the JVM compiles the calls' host code over its first seconds, and a row's own warm-up calls are too
     * few for that. A job calls its index for hours.
     */
    void sizes(String label, String backend, String device, boolean gpu, IntFunction<FlixIndex> open, int[] sizes) {
        if (warmUpCalls > 1 && sizes.length > 0) {
            final long until = System.nanoTime() + JVM_WARM_UP_NANOS;
            reporting = false;
            try {
                do {
                    size(label, backend, device, gpu, open, sizes[0]);
                } while (System.nanoTime() < until);
            } finally {
                reporting = true;
            }
        }
        for (int n : sizes) {
            size(label, backend, device, gpu, open, n);
        }
    }

    /** The rows of one size. */
    private void size(String label, String backend, String device, boolean gpu, IntFunction<FlixIndex> open, int n) {
        final SplittableRandom random = new SplittableRandom(seed * 7919 + n);
        final long[] keys = distinctKeys(n, random);
        final long[] values = WorkloadKeys.valuesOf(keys);
        final long[] sortedKeys = keys.clone();
        Arrays.parallelSort(sortedKeys);
        final long[] sortedValues = WorkloadKeys.valuesOf(sortedKeys);
        final long[] out = new long[n];
        final int calls = callsFor(n);
        record(label, backend, device, gpu, "bus", "build", n, intoNewIndexes(open, n, calls, index -> {
            index.build(keys, values, n);
            check(index.size() == n, label, "size after build " + index.size() + ", not " + n);
        }), 16L * n, 0);
        record(label, backend, device, gpu, "bus", "restore", n, intoNewIndexes(open, n, calls, index -> {
            index.build(sortedKeys, sortedValues, n, true);
            check(index.size() == n, label, "size after restore " + index.size() + ", not " + n);
        }), 16L * n, 0);
        try (FlixIndex index = open.apply(n)) {
            add(label, backend, device, gpu, "bus", "rebuild", n, calls, 16L * n, 0,
                    () -> index.build(keys, values, n));
            check(index.size() == n, label, "size after build " + index.size() + ", not " + n);
            getRows(label, backend, device, gpu, "bus", index, sortedKeys, keys, out, calls);
            orderedRows(label, backend, device, gpu, "bus", index, sortedKeys, keys, out, calls);
            add(label, backend, device, gpu, "bus", "upsert", n, calls, 16L * n, 0,
                    () -> index.upsert(keys, values, n));
            check(index.size() == n, label, "size after upsert " + index.size() + ", not " + n);
            final int ranges = Math.max(1, n / RANGE_KEYS);
            final long[] lo = new long[ranges];
            final long[] hi = new long[ranges];
            final int[] first = new int[ranges];
            for (int i = 0; i < ranges; i++) {
                final int f = random.nextInt(n);
                first[i] = f;
                lo[i] = f == 0 ? Long.MIN_VALUE : sortedKeys[f - 1] + 1;
                hi[i] = sortedKeys[Math.min(n - 1, f + RANGE_KEYS - 1)];
            }
            final long pairs = IntStream.range(0, ranges).mapToLong(i -> Math.min(RANGE_KEYS, n - first[i])).sum();
            final RangeResult[] result = new RangeResult[1];
            add(label, backend, device, gpu, "bus", "range", ranges, calls, 16L * ranges,
                    16L * pairs + 4L * (ranges + 1),
                    () -> result[0] = index.range(lo, hi, ranges, RANGE_KEYS, result[0]));
            checkRanges(label, sortedKeys, sortedValues, first, result[0]);
        }
    }

    /** A section's rows of sorted and unsorted gets of {@code out.length} keys, each answer checked. */
    private void getRows(String label, String backend, String device, boolean gpu, String section, FlixIndex index,
                         long[] sorted, long[] unsorted, long[] out, int calls) {
        final int n = out.length;
        add(label, backend, device, gpu, section, "get_sorted", n, calls, 8L * n, 8L * n,
                () -> index.get(sorted, n, out, true));
        checkValues(label, section + " get_sorted", sorted, out, n);
        add(label, backend, device, gpu, section, "get_unsorted", n, calls, 8L * n, 8L * n,
                () -> index.get(unsorted, n, out, false));
        checkValues(label, section + " get_unsorted", unsorted, out, n);
    }

    /**
     * A section's rows of floors of a sorted batch and ceilings of an unsorted one ({@code out.length} stored keys,
     * each finding itself), each answer checked.
     */
    private void orderedRows(String label, String backend, String device, boolean gpu, String section,
                             FlixIndex index, long[] sorted, long[] unsorted, long[] out, int calls) {
        final int n = out.length;
        final long[] outKeys = new long[n];
        add(label, backend, device, gpu, section, "floor_sorted", n, calls, 8L * n, 16L * n,
                () -> index.floor(sorted, n, outKeys, out, true));
        checkFound(label, section + " floor_sorted", sorted, outKeys, out, n);
        add(label, backend, device, gpu, section, "ceiling_unsorted", n, calls, 8L * n, 16L * n,
                () -> index.ceiling(unsorted, n, outKeys, out, false));
        checkFound(label, section + " ceiling_unsorted", unsorted, outKeys, out, n);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // latency

    /** Times single calls at each micro-batch size on one index of {@code indexKeys} keys. */
    void latency(String label, String backend, String device, boolean gpu, FlixIndex index, int indexKeys,
                 int[] sizes) {
        final SplittableRandom random = new SplittableRandom(seed * 104729 + indexKeys);
        final long[] keys = distinctKeys(indexKeys, random);
        index.build(keys, WorkloadKeys.valuesOf(keys), indexKeys);
        final MicroBatchEngine hostSort = new MicroBatchEngine(index, MicroBatchEngine.Sorting.HOST_SORT);
        final MicroBatchEngine indexSort = new MicroBatchEngine(index, MicroBatchEngine.Sorting.INDEX_SORT);
        for (int n : sizes) {
            final long[] probes = new long[n];
            for (int i = 0; i < n; i++) {
                probes[i] = keys[random.nextInt(indexKeys)];
            }
            final long[] probeValues = WorkloadKeys.valuesOf(probes);
            final long[] sorted = probes.clone();
            Arrays.sort(sorted);
            final long[] sortedValues = WorkloadKeys.valuesOf(sorted);
            final long[] out = new long[n];
            final OperationBatch batch = new OperationBatch(n);
            final OperationBatch floors = new OperationBatch(n);
            // gets with upserts of stored keys to their own values among them: every get still finds its key's value
            final OperationBatch mixed = new OperationBatch(n);
            for (int i = 0; i < n; i++) {
                final long k = probes[i];
                batch.get(k);
                floors.floor(k);
                if (i % MIXED_UPSERT_EVERY == MIXED_UPSERT_EVERY - 1) {
                    mixed.upsert(k, probeValues[i]);
                } else {
                    mixed.get(k);
                }
            }
            final int calls = Math.max(25, Math.min(400, (1 << 24) / n));
            getRows(label, backend, device, gpu, "latency", index, sorted, probes, out, calls);
            orderedRows(label, backend, device, gpu, "latency", index, sorted, probes, out, calls);
            add(label, backend, device, gpu, "latency", "upsert_sorted", n, calls, 16L * n, 0,
                    () -> index.upsert(sorted, sortedValues, n, true));
            add(label, backend, device, gpu, "latency", "upsert_unsorted", n, calls, 16L * n, 0,
                    () -> index.upsert(probes, probeValues, n, false));
            check(index.size() == indexKeys, label, "size after upserts " + index.size());
            for (MicroBatchEngine engine : List.of(hostSort, indexSort)) {
                final String op = engine.sorting() == MicroBatchEngine.Sorting.HOST_SORT
                        ? "engine_get_host_sort" : "engine_get_index_sort";
                final BatchResults[] results = new BatchResults[1];
                add(label, backend, device, gpu, "latency", op, n, calls, 8L * n, 8L * n,
                        () -> results[0] = engine.execute(batch));
                for (int i = 0; i < n; i++) {
                    if (results[0].value(i) != probeValues[i]) {
                        check(false, label, op + " at " + i + ": key " + probes[i] + " gave " + results[0].value(i));
                    }
                }
                // floors of stored keys: each finds itself
                final String floorOp = op.replace("engine_get", "engine_floor");
                add(label, backend, device, gpu, "latency", floorOp, n, calls, 8L * n, 16L * n,
                        () -> results[0] = engine.execute(floors));
                for (int i = 0; i < n; i++) {
                    if (results[0].key(i) != probes[i] || results[0].value(i) != probeValues[i]) {
                        check(false, label, floorOp + " at " + i + ": key " + probes[i] + " gave " + results[0].key(i)
                                + " = " + results[0].value(i));
                    }
                }
                final String mixedOp = op.replace("engine_get", "engine_mixed");
                final long upserts = n / MIXED_UPSERT_EVERY;
                add(label, backend, device, gpu, "latency", mixedOp, n, calls, 8L * n + 8L * upserts,
                        8L * (n - upserts), () -> results[0] = engine.execute(mixed));
                for (int i = 0; i < n; i++) {
                    if (mixed.kind(i) == OperationBatch.GET && results[0].value(i) != probeValues[i]) {
                        check(false, label, mixedOp + " at " + i + ": key " + probes[i] + " gave "
                                + results[0].value(i));
                    }
                }
                check(index.size() == indexKeys, label, mixedOp + ": size " + index.size());
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------

    /**
     * Calls a row makes before its timed calls, unreported, by default: at most this many, and none more once {@link
     * #WARM_UP_NANOS} have passed, but at least one (its first-call allocations). A job calls its index thousands of
     * times, so the JVM has compiled the calls' host code; a row's first calls run it interpreted.
     */
    static final int WARM_UP_CALLS = 40;
    static final long WARM_UP_NANOS = 100_000_000L;
    /** How long the bus sweep's first size runs unreported before its rows are timed ({@link #sizes}). */
    static final long JVM_WARM_UP_NANOS = 3_000_000_000L;

    private void warmUp(Runnable call) {
        final long until = System.nanoTime() + WARM_UP_NANOS;
        int made = 0;
        do {
            call.run();
            made++;
        } while (made < warmUpCalls && System.nanoTime() < until);
    }

    /** The times of {@code calls} timed calls of {@code call}, each on an index just opened (after a warm-up). */
    private double[] intoNewIndexes(IntFunction<FlixIndex> open, int n, int calls, Consumer<FlixIndex> call) {
        warmUp(() -> {
            try (FlixIndex index = open.apply(n)) {
                call.accept(index);
            }
        });
        final double[] ms = new double[calls];
        for (int c = 0; c < calls; c++) {
            try (FlixIndex index = open.apply(n)) {
                final long start = System.nanoTime();
                call.accept(index);
                ms[c] = (System.nanoTime() - start) / 1e6;
            }
        }
        return ms;
    }

    private void add(String label, String backend, String device, boolean gpu, String section, String operation,
                     int keys, int calls, long bytesIn, long bytesOut, Runnable call) {
        warmUp(call);
        final double[] ms = new double[calls];
        for (int c = 0; c < calls; c++) {
            final long start = System.nanoTime();
            call.run();
            ms[c] = (System.nanoTime() - start) / 1e6;
        }
        record(label, backend, device, gpu, section, operation, keys, ms, bytesIn, bytesOut);
    }

    /** Adds the row of the calls timed {@code ms}: their median. */
    private void record(String label, String backend, String device, boolean gpu, String section, String operation,
                        int keys, double[] ms, long bytesIn, long bytesOut) {
        if (!reporting) {
            return;
        }
        final int calls = ms.length;
        Arrays.sort(ms);
        final double bound = gpu ? measureBus().boundMillis(bytesIn, bytesOut) : Double.NaN;
        final Row row = new Row(label, backend, device, section, operation, keys, calls, ms[calls / 2], bytesIn,
                bytesOut, bound);
        rows.add(row);
        System.out.printf(Locale.ROOT, "%-8s %-10s %-22s %9d keys %10.3f ms %10.2f M keys/s%s%n", section, label,
                operation, keys, row.medianMs(), row.keysPerSec() / 1e6,
                gpu ? String.format(Locale.ROOT, "  %.2fx the bus bound", row.medianMs() / bound) : "");
    }

    /** Calls per row: enough for a steady median at small sizes, a few at the largest. */
    private static int callsFor(int n) {
        return Math.max(5, Math.min(41, (1 << 26) / Math.max(1, n)));
    }

    /** {@code n} distinct keys over the whole {@code long} range, in random order (a bijective mix of a counter). */
    static long[] distinctKeys(int n, SplittableRandom random) {
        final long offset = random.nextLong();
        final long[] keys = new long[n];
        IntStream.range(0, n).parallel().forEach(i -> keys[i] = mix(offset + i));
        return keys;
    }

    /** The finaliser of SplitMix64: a bijection of {@code long}. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** An ordered lookup of stored keys: each found itself, with its value. */
    private static void checkFound(String label, String what, long[] keys, long[] keysOut, long[] values, int n) {
        checkEach(label, what, n, i -> keysOut[i] == keys[i] && values[i] == WorkloadKeys.valueOf(keys[i]),
                i -> "key " + keys[i] + " found " + keysOut[i] + " with " + values[i]);
    }

    private static void checkValues(String label, String what, long[] keys, long[] values, int n) {
        checkEach(label, what, n, i -> values[i] == WorkloadKeys.valueOf(keys[i]),
                i -> "key " + keys[i] + " gave " + values[i]);
    }

    /** Fails the run at the first answer {@code i < n} that is not {@code right}, saying what it {@code gave}. */
    private static void checkEach(String label, String what, int n, IntPredicate right, IntFunction<String> gave) {
        final int bad = IntStream.range(0, n).parallel().filter(i -> !right.test(i)).findFirst().orElse(-1);
        if (bad >= 0) {
            check(false, label, what + " at " + bad + ": " + gave.apply(bad));
        }
    }

    private static void checkRanges(String label, long[] sortedKeys, long[] sortedValues, int[] first,
                                    RangeResult result) {
        check(result.ranges() == first.length, label, "range returned " + result.ranges() + " ranges");
        final int bad = IntStream.range(0, first.length).parallel().filter(i -> {
            final int expected = Math.min(RANGE_KEYS, sortedKeys.length - first[i]);
            if (result.count(i) != expected) {
                return true;
            }
            for (int j = 0; j < expected; j++) {
                final int at = result.offsets()[i] + j;
                if (result.keys()[at] != sortedKeys[first[i] + j] || result.values()[at] != sortedValues[first[i] + j]) {
                    return true;
                }
            }
            return false;
        }).findFirst().orElse(-1);
        check(bad < 0, label, "range " + bad + " returned the wrong pairs");
    }

    private static void check(boolean ok, String label, String what) {
        if (!ok) {
            throw new IllegalStateException("wrong result from " + label + ": " + what);
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // summary

    /** The markdown sections: the bus rates, the size sweep against the bound, the latency tables. */
    String markdown() {
        final StringBuilder md = new StringBuilder();
        if (rates != null) {
            md.append("\n## The bus, measured in this run\n\n");
            md.append(String.format(Locale.ROOT, "Pinned host memory to and from the device, %d MiB a copy, median of 7:"
                    + " host to device %.1f GB/s, device to host %.1f GB/s; both directions at once %.1f GB/s in and"
                    + " %.1f GB/s out. A call's bus bound is the larger of its bytes in and its bytes out over these"
                    + " rates (the rates of both at once where it moves both): the copies overlapped, nothing else"
                    + " counted. The host's own copies between Java arrays and pinned memory, on every core: %.1f GB/s"
                    + " into pinned memory, %.1f GB/s out of it; a call's host copy time is its bytes in and out over"
                    + " these, one direction after the other (a pipelined call overlaps the two, so it can take"
                    + " less).%n",
                    rates.bytes() >> 20, rates.hostToDevice(), rates.deviceToHost(), rates.duplexHostToDevice(),
                    rates.duplexDeviceToHost(), rates.javaToPinned(), rates.pinnedToJava()));
            md.append(String.format(Locale.ROOT, "%nHost arrays crossed the bus %s.%n", GpuSupport.hostArrayPath()));
        }
        for (String label : rows.stream().filter(r -> r.section().equals("bus")).map(Row::label).distinct().toList()) {
            md.append("\n## End to end by size: ").append(label).append("\n\n");
            md.append("Cells: median ms of one call (million keys a second; range: ranges of ").append(RANGE_KEYS)
                    .append(" keys, size / ").append(RANGE_KEYS).append(" of them)")
                    .append(hasBound(label) ? "; under it the bus bound, the time over the bound, and the host copy"
                            + " time" : "")
                    .append(".\n\n");
            final List<Integer> sizes = rows.stream().filter(r -> r.label().equals(label) && r.section().equals("bus")
                    && r.operation().equals("build")).map(Row::keys).toList();
            md.append("| operation |");
            sizes.forEach(s -> md.append(" ").append(power(s)).append(" |"));
            md.append("\n|---|");
            sizes.forEach(s -> md.append("---|"));
            md.append("\n");
            for (String op : BUS_OPERATIONS) {
                md.append("| ").append(op).append(" |");
                for (int s : sizes) {
                    md.append(" ").append(cell(find(label, "bus", op, s))).append(" |");
                }
                md.append("\n");
                if (hasBound(label)) {
                    md.append("| ").append(op).append(" bus bound |");
                    for (int s : sizes) {
                        final Row r = find(label, "bus", op, s);
                        md.append(r == null ? " |" : String.format(Locale.ROOT, " %.2f ms, %.2fx; host %.2f ms |",
                                r.boundMs(), r.medianMs() / r.boundMs(),
                                rates.hostCopyMillis(r.bytesIn(), r.bytesOut())));
                    }
                    md.append("\n");
                }
            }
        }
        for (String label : rows.stream().filter(r -> r.section().equals("latency")).map(Row::label).distinct()
                .toList()) {
            md.append("\n## Micro-batch latency: ").append(label).append("\n\n");
            md.append("Cells: median ms of one call, end to end (million keys a second). engine_*: a batch through the"
                    + " MicroBatchEngine (gets only, floors only, or gets with an upsert every " + MIXED_UPSERT_EVERY
                    + " operations), sorted on the host then sorted calls (host_sort), or unsorted calls"
                    + " (index_sort).\n\n");
            final List<Integer> sizes = rows.stream().filter(r -> r.label().equals(label)
                    && r.section().equals("latency") && r.operation().equals("get_sorted")).map(Row::keys).toList();
            md.append("| operation |");
            sizes.forEach(s -> md.append(" ").append(power(s)).append(" |"));
            md.append("\n|---|");
            sizes.forEach(s -> md.append("---|"));
            md.append("\n");
            for (String op : LATENCY_OPERATIONS) {
                md.append("| ").append(op).append(" |");
                for (int s : sizes) {
                    md.append(" ").append(cell(find(label, "latency", op, s))).append(" |");
                }
                md.append("\n");
            }
        }
        return md.toString();
    }

    private boolean hasBound(String label) {
        return rows.stream().anyMatch(r -> r.label().equals(label) && !Double.isNaN(r.boundMs()));
    }

    private Row find(String label, String section, String op, int size) {
        final int keys = section.equals("bus") && op.equals("range") ? Math.max(1, size / RANGE_KEYS) : size;
        return rows.stream().filter(r -> r.label().equals(label) && r.section().equals(section)
                && r.operation().equals(op) && r.keys() == keys).findFirst().orElse(null);
    }

    private static String cell(Row r) {
        return r == null ? "" : String.format(Locale.ROOT, "%.3f (%.1f)", r.medianMs(), r.keysPerSec() / 1e6);
    }

    private static String power(int n) {
        return Integer.bitCount(n) == 1 ? "2^" + Integer.numberOfTrailingZeros(n) : Integer.toString(n);
    }
}
