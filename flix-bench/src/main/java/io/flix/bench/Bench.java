package io.flix.bench;

import io.flix.bench.BenchOptions.XyWorkload;
import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;
import io.flix.index.gpu.GpuFlixIndex;
import io.flix.index.gpu.GpuSortedArrayIndex;
import io.flix.index.gpu.GpuSupport;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.IntStream;

/**
 * Runs the paper's update and query experiments (sections 5 and 6) on FliX beside its baselines in one run and
 * writes {@code results.csv}, {@code summary.md} and PNG plots. See {@link BenchOptions#USAGE} for the options.
 *
 * <p>For each X/Y workload and each structure: build, then {@code rounds} insert rounds of a batch each, then as
 * many delete rounds that remove those batches again, then (FliX) a restructure. After the build and after every
 * round: all-hit and all-miss point lookups, each sorted and unsorted (an unsorted batch is sorted inside FliX, so
 * the sort is counted), successor (ceiling) lookups of absent keys and range lookups; and the memory held. Every
 * answer is checked against the generated keys: a wrong one fails the run. Warm-up passes are not reported.
 *
 * <p>{@code --sections} picks the parts of a run: {@code paper} (the above), {@code bus} and {@code latency}
 * ({@link BusBench}: the end-to-end calls by size against the bus bound measured in the same run, and the latency
 * per micro-batch size), written to {@code bus.csv} and the summary's last sections.
 *
 * <p>{@code results.csv} has one row per timed operation; its {@code operation} column reads
 * {@code <operation>@<workload>}, e.g. {@code insert@X90Y90}. Rounds: 0 is the build, 1..rounds the inserts,
 * rounds+1..2*rounds the deletes. {@code memory} rows carry the bytes after each round (no time);
 * {@code memory_restructured} the bytes after the restructure.
 *
 * <p>GPU structures: {@code flix} (the FliX index) and {@code sortedarray} (the paper's GPU baseline, a sorted
 * array whose updates sort the batch and merge it into a new array: {@link GpuSortedArrayIndex}). Each runs under
 * two backend labels: {@code gpu}, timed end to end (Java arrays in and out, host copies and checks included), and
 * {@code gpu-resident}, the device work alone (batches uploaded before the clock starts, results downloaded after
 * it stops; the sort of an unsorted batch is counted; build and range stay end to end: see
 * {@link ResidentStructure}). {@code --gpu-timing} keeps one of the two. The {@code gpu-resident} FliX structure also
 * times alone the sort that every unsorted batch goes through ({@code sort_pairs}: CUB's radix sort of the unsorted
 * hit probes, key and 32-bit position). The GPU structures of a run advance in lockstep (each step on each
 * structure before the next step), so that the probes of a round are drawn once for all of them.
 */
public final class Bench {

    static final String CSV_HEADER =
            "structure,backend,device,operation,round,build_size,batch_size,index_size,ms,ops_per_sec,bytes";

    /** Timed operations in the order they run; the lookups run after every round. */
    static final List<String> LOOKUPS = List.of("get_hit_sorted", "get_hit_unsorted", "get_miss_sorted",
            "get_miss_unsorted", "ceiling", "range");
    static final List<String> ORDERED_ONLY = List.of("ceiling", "range");

    private final BenchOptions options;
    private final List<Result> results = new ArrayList<>();
    private final List<RestructureResult> restructures = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    private final BusBench busBench;
    private final String cpuDevice = cpuDevice();
    private String gpuDevice;

    /** One timed operation (or, for memory rows, a reading with {@code ms} NaN). */
    record Result(String structure, String backend, String device, String workload, String operation, int round,
                  int buildSize, int batchSize, long indexSize, double ms, long bytes) {

        String label() {
            return structure + "-" + backend;
        }

        double opsPerSec() {
            return batchSize / (ms / 1e3);
        }

        /** The inverse of {@link #csv()}. */
        static Result parse(String line) {
            final List<String> f = csvFields(line);
            if (f.size() != 11) {
                throw new IllegalArgumentException("results.csv row has " + f.size() + " fields, not 11: " + line);
            }
            final String[] opAtWorkload = f.get(3).split("@", 2);
            return new Result(f.get(0), f.get(1), f.get(2), opAtWorkload[1], opAtWorkload[0],
                    Integer.parseInt(f.get(4)), Integer.parseInt(f.get(5)), Integer.parseInt(f.get(6)),
                    Long.parseLong(f.get(7)), f.get(8).isEmpty() ? Double.NaN : Double.parseDouble(f.get(8)),
                    Long.parseLong(f.get(10)));
        }

        String csv() {
            final boolean timed = !Double.isNaN(ms);
            return String.join(",", structure, backend, csvField(device), operation + "@" + workload,
                    Integer.toString(round), Integer.toString(buildSize), Integer.toString(batchSize),
                    Long.toString(indexSize), timed ? String.format(Locale.ROOT, "%.3f", ms) : "",
                    timed ? String.format(Locale.ROOT, "%.0f", opsPerSec()) : "", Long.toString(bytes));
        }
    }

    /** FliX's restructure after the delete rounds. */
    record RestructureResult(String label, String workload, long nodesBefore, long nodesAfter, long recovered,
                             long bytesBefore, long bytesAfter, double ms) {
    }

    private record StructureFactory(String label, Supplier<OrderedStructure> open) {
    }

    /** Structures run in lockstep over one workload's sequence. */
    private record StructureGroup(List<StructureFactory> members) {
        static StructureGroup of(StructureFactory one) {
            return new StructureGroup(List.of(one));
        }
    }

    /** Draws the plots of a run: {@link Plots#write}; a test's stand-in simulates a runtime without fonts. */
    @FunctionalInterface
    interface Plotter {
        List<Path> write(Path out, BenchOptions options, List<Result> results) throws IOException;
    }

    private final Plotter plotter;

    private Bench(BenchOptions options, Plotter plotter) {
        this.options = options;
        this.plotter = plotter;
        this.busBench = new BusBench(options.seed(), options.quick() ? 1 : BusBench.WARM_UP_CALLS);
    }

    public static void main(String[] args) throws IOException {
        final BenchOptions options;
        try {
            options = BenchOptions.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("error: " + e.getMessage());
            System.err.println(BenchOptions.USAGE);
            System.exit(2);
            return;
        }
        try {
            run(options);
        } catch (GpuUnavailableException e) {
            System.err.println("error: " + e.getMessage());
            System.exit(3);
        }
    }

    /** Runs the benchmark and writes its files; fails on a wrong answer or when nothing can run. */
    static void run(BenchOptions options) throws IOException {
        run(options, Plots::write);
    }

    /** {@link #run(BenchOptions)} with the plots drawn by {@code plotter}. */
    static void run(BenchOptions options, Plotter plotter) throws IOException {
        System.setProperty("java.awt.headless", "true");
        if (options.plotOnly()) {
            plotOnly(options);
            return;
        }
        new Bench(options, plotter).runAll();
    }

    /** {@code --backend gpu} where the GPU backend cannot run. */
    static final class GpuUnavailableException extends IllegalStateException {
        GpuUnavailableException(String message) {
            super(message);
        }
    }

    private void runAll() throws IOException {
        final List<StructureGroup> structures = structures();
        if (structures.isEmpty()) {
            throw new IllegalArgumentException("--structures " + options.structures() + " leaves nothing to run on "
                    + "--backend " + options.backend());
        }
        Files.createDirectories(options.out());
        final boolean paper = options.sections().contains("paper");
        if (paper) {
            runPaperWorkloads(structures);
        }
        runBusSections();
        write(paper);
    }

    /** The paper's update and query experiments: every workload on every structure group. */
    private void runPaperWorkloads(List<StructureGroup> structures) {
        if (options.warmup() > 0) {
            final XyWorkload first = options.workloads().get(0);
            final WorkloadKeys warmKeys = WorkloadKeys.generate(first, options.distribution(),
                    Math.min(options.buildSize(), 1 << 16), Math.min(options.batchSize(), 1 << 14), options.rounds(),
                    options.seed() + 1);
            for (StructureGroup group : structures) {
                for (int pass = 0; pass < options.warmup(); pass++) {
                    System.out.println("warm-up " + group.members().stream().map(StructureFactory::label).toList()
                            + " pass " + (pass + 1));
                    runSequence(group, warmKeys, first, 0, Math.min(options.probeSize(), 1 << 16),
                            Math.min(options.rangeCount(), 1 << 12), false);
                }
            }
        }
        for (int w = 0; w < options.workloads().size(); w++) {
            final XyWorkload workload = options.workloads().get(w);
            final long start = System.nanoTime();
            final WorkloadKeys keys = WorkloadKeys.generate(workload, options.distribution(), options.buildSize(),
                    options.batchSize(), options.rounds(), options.seed() + 1000L * (w + 1));
            System.out.printf(Locale.ROOT, "workload %s: %d keys generated in %.1f s%n", workload.label(),
                    options.generatedKeys(), (System.nanoTime() - start) / 1e9);
            for (StructureGroup group : structures) {
                runSequence(group, keys, workload, w, options.probeSize(), options.rangeCount(), true);
            }
        }
    }

    /**
     * The bus and latency sections ({@link BusBench}) on each FliX backend of the run: the CPU backend unless
     * {@code --backend gpu}, the GPU backend where it runs and {@code --backend} is not cpu.
     */
    private void runBusSections() {
        final boolean bus = options.sections().contains("bus");
        final boolean latency = options.sections().contains("latency");
        if (!(bus || latency) || !options.structures().contains("flix")) {
            return;
        }
        final List<Backend> backends = new ArrayList<>();
        if (!options.backend().equals("gpu")) {
            backends.add(Backend.CPU);
        }
        if (!options.backend().equals("cpu") && gpuDevice != null) {
            backends.add(Backend.GPU);
        }
        for (Backend backend : backends) {
            final boolean gpu = backend == Backend.GPU;
            final String name = gpu ? "gpu" : "cpu";
            final String device = gpu ? gpuDevice : cpuDevice;
            if (bus) {
                busBench.sizes("flix-" + name, name, device, gpu, n -> FlixIndex.open(flixConfig(backend)),
                        options.busSizes());
            }
            if (latency) {
                try (FlixIndex index = FlixIndex.open(flixConfig(backend))) {
                    busBench.latency("flix-" + name, name, device, gpu, index, options.buildSize(),
                            options.latencySizes());
                }
            }
        }
    }

    private List<StructureGroup> structures() {
        final List<StructureGroup> list = new ArrayList<>();
        final boolean cpu = !options.backend().equals("gpu");
        final boolean gpu = !options.backend().equals("cpu");
        final List<String> wanted = options.structures();
        if (cpu && wanted.contains("flix")) {
            list.add(StructureGroup.of(new StructureFactory("flix-cpu",
                    () -> new FlixStructure(flixConfig(Backend.CPU)))));
        }
        final List<StructureFactory> gpuGroup = new ArrayList<>();
        if (gpu && (wanted.contains("flix") || wanted.contains("sortedarray"))) {
            final String reason = shortReason(GpuSupport.unavailableReason());
            if (reason == null) {
                gpuDevice = gpuDevice();
                final boolean endToEnd = !options.gpuTiming().equals("resident");
                final boolean resident = !options.gpuTiming().equals("end-to-end");
                if (wanted.contains("flix") && endToEnd) {
                    gpuGroup.add(new StructureFactory("flix-gpu", () -> new FlixStructure(flixConfig(Backend.GPU))));
                }
                if (wanted.contains("flix") && resident) {
                    gpuGroup.add(new StructureFactory("flix-" + ResidentStructure.BACKEND,
                            () -> new ResidentStructure("flix", GpuFlixIndex.open(flixConfig(Backend.GPU)), true,
                                    true)));
                }
                if (wanted.contains("sortedarray") && endToEnd) {
                    gpuGroup.add(new StructureFactory("sortedarray-gpu", () -> new FlixStructure("sortedarray",
                            GpuSortedArrayIndex.open(flixConfig(Backend.GPU)), false)));
                }
                if (wanted.contains("sortedarray") && resident) {
                    gpuGroup.add(new StructureFactory("sortedarray-" + ResidentStructure.BACKEND,
                            () -> new ResidentStructure("sortedarray",
                                    GpuSortedArrayIndex.open(flixConfig(Backend.GPU)), false,
                                    !wanted.contains("flix"))));
                }
            } else if (options.backend().equals("gpu")) {
                throw new GpuUnavailableException("--backend gpu cannot run: " + reason);
            } else {
                notes.add("GPU structures skipped: " + reason);
                System.out.println("skipping the GPU structures: " + reason);
            }
        }
        if (!gpuGroup.isEmpty()) {
            list.add(new StructureGroup(List.copyOf(gpuGroup)));
        }
        if (cpu && wanted.contains("TreeMap")) {
            list.add(StructureGroup.of(new StructureFactory("TreeMap-cpu", SortedMapStructure::treeMap)));
        }
        if (cpu && wanted.contains("ConcurrentSkipListMap")) {
            list.add(StructureGroup.of(new StructureFactory("ConcurrentSkipListMap-cpu",
                    SortedMapStructure::concurrentSkipListMap)));
        }
        if (cpu && wanted.contains("Long2LongOpenHashMap")) {
            list.add(StructureGroup.of(new StructureFactory("Long2LongOpenHashMap-cpu", HashMapStructure::new)));
        }
        return list;
    }

    private FlixConfig flixConfig(Backend backend) {
        return FlixConfig.builder().backend(backend).threads(options.threads()).build();
    }

    /** Build, insert rounds, delete rounds, restructure, with lookups after each step; the group in lockstep. */
    private void runSequence(StructureGroup group, WorkloadKeys keys, XyWorkload workload, int workloadIndex,
                             int probes, int ranges, boolean report) {
        final int rounds = options.rounds();
        final Recorder rec = new Recorder(workload.label(), report);
        final List<OrderedStructure> structures = new ArrayList<>();
        try {
            for (StructureFactory factory : group.members()) {
                structures.add(factory.open().get());
            }
            final long[] buildKeys = keys.buildKeys();
            final long[] buildValues = WorkloadKeys.valuesOf(buildKeys);
            for (OrderedStructure s : structures) {
                rec.time(s, "build", 0, buildKeys.length, () -> s.build(buildKeys, buildValues, buildKeys.length));
                check(s.size() == buildKeys.length, s, "size after build: " + s.size());
            }
            afterRound(structures, rec, keys.state(0, 0), 0, workloadIndex, probes, ranges);
            for (int r = 1; r <= rounds; r++) {
                final long[] batch = keys.batch(r);
                final long[] values = WorkloadKeys.valuesOf(batch);
                for (OrderedStructure s : structures) {
                    final long expected = s.size() + batch.length;
                    rec.time(s, "insert", r, batch.length, () -> s.upsert(batch, values, batch.length));
                    check(s.size() == expected, s, "size after insert round " + r + ": " + s.size() + ", not "
                            + expected);
                }
                afterRound(structures, rec, keys.state(r, 0), r, workloadIndex, probes, ranges);
            }
            for (int d = 1; d <= rounds; d++) {
                final long[] batch = keys.batch(d);
                for (OrderedStructure s : structures) {
                    final long expected = s.size() - batch.length;
                    rec.time(s, "delete", rounds + d, batch.length, () -> s.delete(batch, batch.length));
                    check(s.size() == expected, s, "size after delete round " + d + ": " + s.size() + ", not "
                            + expected);
                }
                afterRound(structures, rec, keys.state(rounds, d), rounds + d, workloadIndex, probes, ranges);
            }
            for (OrderedStructure s : structures) {
                if (s.nodes() >= 0) {
                    restructure(s, rec, keys.state(rounds, rounds), 2 * rounds);
                }
            }
        } finally {
            for (OrderedStructure s : structures) {
                s.close();
            }
        }
    }

    private void restructure(OrderedStructure s, Recorder rec, WorkloadKeys.State state, int round) {
        final long nodesBefore = s.nodes();
        final long bytesBefore = s.bytes();
        final long sizeBefore = s.size();
        final long[] recovered = new long[1];
        final double ms = rec.time(s, "restructure", round, (int) Math.min(Integer.MAX_VALUE, sizeBefore),
                () -> recovered[0] = s.restructure());
        check(s.size() == sizeBefore, s, "size changed by restructure: " + s.size());
        check(nodesBefore - s.nodes() == recovered[0], s,
                "restructure reported " + recovered[0] + " nodes recovered, stats say " + (nodesBefore - s.nodes()));
        final long[] probe = WorkloadKeys.State.sample(state.present(), Math.min(state.present().length, 1 << 16),
                new SplittableRandom(options.seed()));
        final long[] out = new long[probe.length];
        s.get(probe, probe.length, out, false);
        checkValues(s, "get after restructure", probe, out);
        rec.memory(s, "memory_restructured", round);
        if (rec.report) {
            restructures.add(new RestructureResult(s.name() + "-" + s.backend(), rec.workload, nodesBefore, s.nodes(),
                    recovered[0], bytesBefore, s.bytes(), ms));
        }
    }

    /** Memory and every lookup after one round, verified; the probes are drawn once for the whole group. */
    private void afterRound(List<OrderedStructure> structures, Recorder rec, WorkloadKeys.State state, int round,
                            int workloadIndex, int probes, int ranges) {
        final SplittableRandom random = new SplittableRandom(options.seed() * 31 + workloadIndex * 1009L + round);
        final long[] hits = WorkloadKeys.State.sample(state.present(), probes, random);
        final long[] misses = WorkloadKeys.State.sample(state.absent(), probes, random);
        final int[] successorIndexes = WorkloadKeys.State.sampleIndexes(state.absent().length, probes, random);
        final long[] successorProbes = WorkloadKeys.State.gather(state.absent(), successorIndexes);
        final long[] values = new long[probes];
        final long[] keysOut = new long[probes];
        final long[] hitsSorted = sortedCopy(hits);
        final long[] missesSorted = sortedCopy(misses);
        final int[] expectedCeiling = structures.stream().anyMatch(OrderedStructure::ordered)
                ? expectedCeilings(state, successorIndexes) : null;

        final long[] present = state.present();
        final int span = options.rangeKeys();
        final long[] lo = new long[ranges];
        final long[] hi = new long[ranges];
        final int[] first = new int[ranges];
        for (int i = 0; i < ranges; i++) {
            // [just above the key before present[first], present[first + span - 1]]: exactly span keys
            final int f = random.nextInt(present.length);
            first[i] = f;
            lo[i] = f == 0 ? Long.MIN_VALUE : present[f - 1] + 1;
            hi[i] = present[Math.min(present.length - 1, f + span - 1)];
        }

        for (OrderedStructure s : structures) {
            rec.memory(s, "memory", round);
            rec.time(s, "get_hit_sorted", round, probes, () -> s.get(hitsSorted, probes, values, true));
            checkValues(s, "get_hit_sorted", hitsSorted, values);
            rec.time(s, "get_hit_unsorted", round, probes, () -> s.get(hits, probes, values, false));
            checkValues(s, "get_hit_unsorted", hits, values);
            rec.time(s, "get_miss_sorted", round, probes, () -> s.get(missesSorted, probes, values, true));
            checkMisses(s, "get_miss_sorted", values);
            rec.time(s, "get_miss_unsorted", round, probes, () -> s.get(misses, probes, values, false));
            checkMisses(s, "get_miss_unsorted", values);
            if (s instanceof ResidentStructure r && r.timesSort()) {
                rec.time(s, "sort_pairs", round, probes, () -> r.sortPairs(hits, probes, round == 0));
            }
            if (!s.ordered()) {
                continue;
            }
            rec.time(s, "ceiling", round, probes, () -> s.ceiling(successorProbes, probes, keysOut, values, false));
            checkCeiling(s, state.present(), successorProbes, expectedCeiling, keysOut, values);
            final RangeResult[] result = new RangeResult[1];
            rec.time(s, "range", round, ranges, () -> result[0] = s.range(lo, hi, ranges, span));
            checkRanges(s, present, first, result[0]);
        }
    }

    /** The present index of the ceiling of each successor probe (absent[successorIndexes[i]]). */
    private static int[] expectedCeilings(WorkloadKeys.State state, int[] successorIndexes) {
        final int[] ofAbsent = state.absentCeilingIndexes();
        final int[] out = new int[successorIndexes.length];
        IntStream.range(0, out.length).parallel().forEach(i -> out[i] = ofAbsent[successorIndexes[i]]);
        return out;
    }

    private static long[] sortedCopy(long[] keys) {
        final long[] sorted = keys.clone();
        Arrays.parallelSort(sorted);
        return sorted;
    }

    private static void checkValues(OrderedStructure s, String what, long[] keys, long[] values) {
        final int bad = IntStream.range(0, keys.length).parallel()
                .filter(i -> values[i] != WorkloadKeys.valueOf(keys[i])).findFirst().orElse(-1);
        check(bad < 0, s, what + " at " + bad + ": key " + (bad < 0 ? 0 : keys[bad]) + " gave "
                + (bad < 0 ? 0 : values[bad]));
    }

    private static void checkMisses(OrderedStructure s, String what, long[] values) {
        final int bad = IntStream.range(0, values.length).parallel().filter(i -> values[i] != Long.MIN_VALUE)
                .findFirst().orElse(-1);
        check(bad < 0, s, what + " at " + bad + " found a value for an absent key");
    }

    private static void checkCeiling(OrderedStructure s, long[] present, long[] probes, int[] expectedCeiling,
                                     long[] keysOut, long[] values) {
        final int bad = IntStream.range(0, probes.length).parallel().filter(i -> {
            final int c = expectedCeiling[i];
            return c == present.length
                    ? keysOut[i] != 0 || values[i] != Long.MIN_VALUE
                    : keysOut[i] != present[c] || values[i] != WorkloadKeys.valueOf(present[c]);
        }).findFirst().orElse(-1);
        check(bad < 0, s, "ceiling at " + bad + " of key " + (bad < 0 ? 0 : probes[bad]));
    }

    private void checkRanges(OrderedStructure s, long[] present, int[] first, RangeResult result) {
        final int span = options.rangeKeys();
        check(result.ranges() == first.length, s, "range returned " + result.ranges() + " ranges");
        final int bad = IntStream.range(0, first.length).parallel().filter(i -> {
            final int expected = Math.min(span, present.length - first[i]);
            if (result.count(i) != expected) {
                return true;
            }
            for (int j = 0; j < expected; j++) {
                final int at = result.offsets()[i] + j;
                if (result.keys()[at] != present[first[i] + j]
                        || result.values()[at] != WorkloadKeys.valueOf(present[first[i] + j])) {
                    return true;
                }
            }
            return false;
        }).findFirst().orElse(-1);
        check(bad < 0, s, "range " + bad + " returned the wrong keys");
    }

    private static void check(boolean ok, OrderedStructure s, String what) {
        if (!ok) {
            throw new IllegalStateException("wrong result from " + s.name() + "-" + s.backend() + ": " + what);
        }
    }

    /** Times operations of one sequence and keeps them when reported. */
    private final class Recorder {
        final String workload;
        final boolean report;

        Recorder(String workload, boolean report) {
            this.workload = workload;
            this.report = report;
        }

        double time(OrderedStructure s, String operation, int round, int batchSize, Runnable body) {
            final long start = System.nanoTime();
            body.run();
            final double wallMs = (System.nanoTime() - start) / 1e6;
            final double ms = Double.isNaN(s.deviceMillis()) ? wallMs : s.deviceMillis();
            if (report) {
                final Result r = new Result(s.name(), s.backend(), device(s.backend()), workload, operation, round,
                        options.buildSize(), batchSize, s.size(), ms, s.bytes());
                results.add(r);
                System.out.printf(Locale.ROOT, "%-7s %-28s %-18s round %2d %10.2f ms %9.2f M ops/s%n", workload,
                        r.label(), operation, round, ms, r.opsPerSec() / 1e6);
            }
            return ms;
        }

        void memory(OrderedStructure s, String operation, int round) {
            if (report) {
                results.add(new Result(s.name(), s.backend(), device(s.backend()), workload, operation, round,
                        options.buildSize(), 0, s.size(), Double.NaN, s.bytes()));
            }
        }
    }

    /**
     * The plots, or none where this Java runtime cannot draw text (a trimmed runtime on a machine without the
     * font libraries): the summary says so, and {@code --plot-only} draws them later from results.csv.
     */
    private List<Path> drawPlots() throws IOException {
        try {
            return plotter.write(options.out(), options, results);
        } catch (LinkageError | java.awt.AWTError | InternalError | RuntimeException e) {
            // a runtime without fonts fails in many ways (UnsatisfiedLinkError, AWTError, InternalError, an NPE
            // from the font configuration); the CSV and the summary are the results, so they are written anyway
            notes.add("plots not drawn here (" + e + "); draw them from results.csv elsewhere with the same"
                    + " options plus --plot-only");
            return List.of();
        }
    }

    /** {@code --plot-only}: draws the plots of an earlier run from {@code out/results.csv}. */
    private static void plotOnly(BenchOptions options) throws IOException {
        final List<Result> results = new ArrayList<>();
        final List<String> lines = Files.readAllLines(options.out().resolve("results.csv"));
        if (lines.isEmpty() || !lines.get(0).equals(CSV_HEADER)) {
            throw new IOException(options.out().resolve("results.csv") + " does not start with " + CSV_HEADER);
        }
        for (String line : lines.subList(1, lines.size())) {
            results.add(Result.parse(line));
        }
        final List<Path> plots = Plots.write(options.out(), options, results);
        System.out.println("drew " + plots.size() + " plots from " + results.size() + " rows into " + options.out());
    }

    /** results.csv, plots and the summary of the paper section (where it ran), bus.csv and its sections. */
    private void write(boolean paper) throws IOException {
        final Path csv = options.out().resolve("results.csv");
        List<Path> plots = List.of();
        String summary;
        if (paper) {
            try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv))) {
                w.println(CSV_HEADER);
                results.forEach(r -> w.println(r.csv()));
            }
            plots = drawPlots();
            summary = Summary.markdown(options, results, restructures, notes, devices(), plots);
        } else {
            summary = "# FliX benchmark\n\n- date: " + java.time.LocalDate.now() + "\n- devices: "
                    + String.join("; ", devices()) + "\n- java: " + System.getProperty("java.vm.name") + " "
                    + System.getProperty("java.version") + ", max heap " + (Runtime.getRuntime().maxMemory() >> 20)
                    + " MiB\n- every answer was checked (a wrong one fails the run)\n";
            for (String note : notes) {
                summary += "- " + note + "\n";
            }
        }
        final Path busCsv = options.out().resolve("bus.csv");
        if (!busBench.rows().isEmpty()) {
            try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(busCsv))) {
                w.println(BusBench.CSV_HEADER);
                busBench.rows().forEach(r -> w.println(r.csv()));
            }
            summary += busBench.markdown();
        }
        Files.writeString(options.out().resolve("summary.md"), summary);
        System.out.println();
        System.out.print(summary);
        System.out.println("wrote " + (paper ? csv + ", " : "") + (busBench.rows().isEmpty() ? "" : busCsv + ", ")
                + options.out().resolve("summary.md") + " and " + plots.size() + " plots");
    }

    private List<String> devices() {
        final List<String> d = new ArrayList<>();
        if (!options.backend().equals("gpu")) {
            d.add(cpuDevice);
        }
        if (gpuDevice != null) {
            d.add(gpuDevice);
        }
        if (options.backend().equals("gpu")) {
            d.add("host " + cpuDevice);
        }
        return d;
    }

    private String device(String backend) {
        return backend.startsWith("gpu") && gpuDevice != null ? gpuDevice : cpuDevice;
    }

    private static String cpuDevice() {
        String model = System.getProperty("os.arch");
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    model = line.substring(line.indexOf(':') + 1).trim();
                    break;
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux: the architecture name stands in
        }
        return "cpu " + model + " x" + Runtime.getRuntime().availableProcessors();
    }

    /** The GPU's name from nvidia-smi where it answers (the GPU backend does not expose it). */
    private static String gpuDevice() {
        try {
            final Process p = new ProcessBuilder("nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", "0")
                    .redirectErrorStream(true).start();
            try (BufferedReader r = new BufferedReader(
                    new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                final String line = r.readLine();
                if (p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 && line != null && !line.isBlank()) {
                    return "gpu " + line.trim();
                }
            }
        } catch (IOException e) {
            // no nvidia-smi on the path
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return "gpu (CUDA device 0)";
    }

    /**
     * The first line of a reason and its root cause: a failed native load explains itself over dozens of lines
     * of nested stack traces.
     */
    static String shortReason(String reason) {
        if (reason == null || !reason.contains("\n")) {
            return reason;
        }
        final String[] lines = reason.split("\n");
        String cause = null;
        for (String line : lines) {
            final String t = line.trim();
            if (!t.startsWith("at ") && (t.contains("Error: ") || t.contains("Exception: "))) {
                cause = t;
            }
        }
        return cause == null ? lines[0].trim() : lines[0].trim() + " ... " + cause;
    }

    /** The fields of one results.csv row, with {@link #csvField} quoting undone. */
    static List<String> csvFields(String line) {
        final List<String> fields = new ArrayList<>();
        final StringBuilder field = new StringBuilder();
        boolean quoted = false;
        for (int i = 0; i < line.length(); i++) {
            final char c = line.charAt(i);
            if (quoted) {
                if (c == '"' && i + 1 < line.length() && line.charAt(i + 1) == '"') {
                    field.append('"');
                    i++;
                } else if (c == '"') {
                    quoted = false;
                } else {
                    field.append(c);
                }
            } else if (c == '"') {
                quoted = true;
            } else if (c == ',') {
                fields.add(field.toString());
                field.setLength(0);
            } else {
                field.append(c);
            }
        }
        fields.add(field.toString());
        return fields;
    }

    static String csvField(String s) {
        return s.contains(",") || s.contains("\"") ? '"' + s.replace("\"", "\"\"") + '"' : s;
    }
}
