package io.flix.bench;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.Supplier;

/**
 * Measures FliX beside its baselines in one run and writes {@code results.csv} and {@code summary.md}.
 *
 * <pre>
 * java -cp ... io.flix.bench.Bench --backend cpu|gpu|all --out DIR [--quick]
 *      [--build-size N] [--batch-size N] [--probe-size N] [--rounds N] [--warmup N] [--seed N] [--threads N]
 * </pre>
 * Sizes accept {@code 2^k}. Every round builds each structure afresh from the same keys, then times, in order:
 * build (unsorted pairs), get of the probe keys sorted and unsorted (all hits), upsert of a batch of new keys,
 * delete of a batch of present keys. Results are verified, so nothing is optimised away and no wrong answer is
 * timed. Warm-up rounds are run and not reported.
 */
public final class Bench {

    static final String CSV_HEADER =
            "structure,backend,device,operation,round,build_size,batch_size,index_size,ms,ops_per_sec,bytes";

    private final BenchOptions options;
    private final List<String> csvRows = new ArrayList<>();
    /** structure label -> operation -> measured milliseconds of the reported rounds. */
    private final Map<String, Map<String, List<Double>>> timings = new LinkedHashMap<>();

    private Bench(BenchOptions options) {
        this.options = options;
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
        new Bench(options).run();
    }

    private void run() throws IOException {
        final List<Supplier<OrderedStructure>> structures = new ArrayList<>();
        if (options.backend().equals("cpu") || options.backend().equals("all")) {
            structures.add(() -> new FlixStructure(flixConfig(Backend.CPU)));
            structures.add(SortedMapStructure::treeMap);
            structures.add(SortedMapStructure::concurrentSkipListMap);
        }
        if (options.backend().equals("gpu") || options.backend().equals("all")) {
            structures.add(() -> new FlixStructure(flixConfig(Backend.GPU)));
        }
        final Workload workload = Workload.generate(options);
        for (Supplier<OrderedStructure> factory : structures) {
            for (int round = -options.warmup(); round < options.rounds(); round++) {
                try (OrderedStructure structure = factory.get()) {
                    measureRound(structure, workload, round);
                }
            }
        }
        write();
    }

    private FlixConfig flixConfig(Backend backend) {
        return FlixConfig.builder().backend(backend).threads(options.threads()).build();
    }

    private void measureRound(OrderedStructure s, Workload w, int round) {
        final int buildSize = w.buildKeys().length;
        final long[] out = new long[Math.max(w.probeSorted().length, 1)];

        record("build", s, round, buildSize, () -> s.build(w.buildKeys(), w.buildValues(), buildSize));
        record("get_sorted", s, round, w.probeSorted().length,
                () -> s.get(w.probeSorted(), w.probeSorted().length, out, true));
        w.checkProbeHits(w.probeSorted(), out, s.name() + " get_sorted");
        record("get_unsorted", s, round, w.probeUnsorted().length,
                () -> s.get(w.probeUnsorted(), w.probeUnsorted().length, out, false));
        w.checkProbeHits(w.probeUnsorted(), out, s.name() + " get_unsorted");
        record("upsert", s, round, w.insertKeys().length,
                () -> s.upsert(w.insertKeys(), w.insertValues(), w.insertKeys().length));
        check(s.size() == buildSize + w.insertKeys().length, s.name() + " size after upsert: " + s.size());
        record("delete", s, round, w.deleteKeys().length, () -> s.delete(w.deleteKeys(), w.deleteKeys().length));
        check(s.size() == buildSize + w.insertKeys().length - w.deleteKeys().length,
                s.name() + " size after delete: " + s.size());
    }

    private void record(String operation, OrderedStructure s, int round, int batchSize, Runnable body) {
        final long start = System.nanoTime();
        body.run();
        final double ms = (System.nanoTime() - start) / 1e6;
        if (round < 0) {
            return;
        }
        final String label = s.name() + "-" + s.backend();
        timings.computeIfAbsent(label, k -> new LinkedHashMap<>())
                .computeIfAbsent(operation, k -> new ArrayList<>()).add(ms);
        final double opsPerSec = batchSize / (ms / 1e3);
        csvRows.add(String.join(",", s.name(), s.backend(), csvField(device(s.backend())), operation,
                Integer.toString(round), Integer.toString(options.buildSize()), Integer.toString(batchSize),
                Long.toString(s.size()), String.format(Locale.ROOT, "%.3f", ms),
                String.format(Locale.ROOT, "%.0f", opsPerSec), Long.toString(s.bytes())));
        System.out.printf(Locale.ROOT, "%-28s %-13s round %d  %10.2f ms  %8.2f M ops/s%n",
                label, operation, round, ms, opsPerSec / 1e6);
    }

    private void write() throws IOException {
        Files.createDirectories(options.out());
        final Path csv = options.out().resolve("results.csv");
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv))) {
            w.println(CSV_HEADER);
            csvRows.forEach(w::println);
        }
        final String summary = summary();
        Files.writeString(options.out().resolve("summary.md"), summary);
        System.out.println();
        System.out.print(summary);
        System.out.println("wrote " + csv + " and " + options.out().resolve("summary.md"));
    }

    private String summary() {
        final StringBuilder md = new StringBuilder();
        md.append("# FliX benchmark\n\n");
        md.append(String.format(Locale.ROOT,
                "build %d keys, probes %d, update batches %d; %d rounds after %d warm-up; medians; %s; %s%n%n",
                options.buildSize(), options.probeSize(), options.batchSize(), options.rounds(), options.warmup(),
                device("cpu"), java.time.LocalDate.now()));
        final List<String> labels = new ArrayList<>(timings.keySet());
        md.append("| operation |");
        labels.forEach(l -> md.append(' ').append(l).append(" ms (M ops/s) |"));
        final List<String[]> ratios = ratioColumns(labels);
        ratios.forEach(r -> md.append(' ').append(r[0]).append(" / ").append(r[1]).append(" |"));
        md.append('\n').append("|---|");
        labels.forEach(l -> md.append("---|"));
        ratios.forEach(r -> md.append("---|"));
        md.append('\n');
        for (String op : List.of("build", "get_sorted", "get_unsorted", "upsert", "delete")) {
            md.append("| ").append(op).append(" |");
            for (String l : labels) {
                final double ms = median(timings.get(l).get(op));
                md.append(String.format(Locale.ROOT, " %.1f (%.2f) |", ms, batchSize(op) / ms / 1e3));
            }
            for (String[] r : ratios) {
                md.append(String.format(Locale.ROOT, " %.1fx |",
                        median(timings.get(r[1]).get(op)) / median(timings.get(r[0]).get(op))));
            }
            md.append('\n');
        }
        md.append("\nRatios are the baseline's median time over FliX's: above 1 means FliX is faster.\n");
        return md.toString();
    }

    /** Each FliX label against each baseline label. */
    private static List<String[]> ratioColumns(List<String> labels) {
        final List<String[]> pairs = new ArrayList<>();
        for (String flix : labels) {
            if (!flix.startsWith("flix-")) {
                continue;
            }
            for (String baseline : labels) {
                if (!baseline.startsWith("flix-")) {
                    pairs.add(new String[] {flix, baseline});
                }
            }
        }
        return pairs;
    }

    private int batchSize(String operation) {
        return switch (operation) {
            case "build" -> options.buildSize();
            case "get_sorted", "get_unsorted" -> options.probeSize();
            default -> options.batchSize();
        };
    }

    static double median(List<Double> values) {
        final double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static String device(String backend) {
        return backend + ": " + System.getProperty("os.arch") + ", " + Runtime.getRuntime().availableProcessors()
                + " cores";
    }

    private static String csvField(String s) {
        return s.contains(",") ? '"' + s + '"' : s;
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("wrong result: " + what);
        }
    }

    /** The keys of one run, shared by every structure so that all see the same work. */
    record Workload(long[] buildKeys, long[] buildValues, long[] probeSorted, long[] probeUnsorted,
                    long[] insertKeys, long[] insertValues, long[] deleteKeys) {

        static Workload generate(BenchOptions o) {
            final SplittableRandom random = new SplittableRandom(o.seed());
            final long[] distinct = distinctKeys(random, o.buildSize() + o.batchSize());
            final long[] buildKeys = Arrays.copyOf(distinct, o.buildSize());
            final long[] insertKeys = Arrays.copyOfRange(distinct, o.buildSize(), distinct.length);
            final long[] buildValues = new long[buildKeys.length];
            for (int i = 0; i < buildKeys.length; i++) {
                buildValues[i] = valueOf(buildKeys[i]);
            }
            final long[] insertValues = new long[insertKeys.length];
            for (int i = 0; i < insertKeys.length; i++) {
                insertValues[i] = valueOf(insertKeys[i]);
            }
            final long[] probeUnsorted = new long[o.probeSize()];
            for (int i = 0; i < probeUnsorted.length; i++) {
                probeUnsorted[i] = buildKeys[random.nextInt(buildKeys.length)];
            }
            final long[] probeSorted = probeUnsorted.clone();
            Arrays.sort(probeSorted);
            final long[] deleteKeys = new long[Math.min(o.batchSize(), buildKeys.length)];
            System.arraycopy(buildKeys, 0, deleteKeys, 0, deleteKeys.length);
            return new Workload(buildKeys, buildValues, probeSorted, probeUnsorted, insertKeys, insertValues,
                    deleteKeys);
        }

        /** Any value but the reserved one; derived from the key so that results can be checked. */
        static long valueOf(long key) {
            final long v = key * 0x9E3779B97F4A7C15L + 1;
            return v == Long.MIN_VALUE ? 0 : v;
        }

        void checkProbeHits(long[] probes, long[] values, String what) {
            for (int i = 0; i < probes.length; i++) {
                if (values[i] != valueOf(probes[i])) {
                    throw new IllegalStateException("wrong result: " + what + " at " + i + " key " + probes[i]);
                }
            }
        }

        /** {@code n} distinct keys over the whole {@code long} range, in random order. */
        private static long[] distinctKeys(SplittableRandom random, int n) {
            final long[] keys = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = random.nextLong();
            }
            while (true) {
                final long[] sorted = keys.clone();
                Arrays.sort(sorted);
                final java.util.Set<Long> repeated = new java.util.HashSet<>();
                for (int i = 1; i < n; i++) {
                    if (sorted[i] == sorted[i - 1]) {
                        repeated.add(sorted[i]);
                    }
                }
                if (repeated.isEmpty()) {
                    return keys;
                }
                final java.util.Set<Long> kept = new java.util.HashSet<>();
                for (int i = 0; i < n; i++) {
                    if (repeated.contains(keys[i]) && !kept.add(keys[i])) {
                        keys[i] = random.nextLong(); // keep the first occurrence, redraw the others
                    }
                }
            }
        }
    }
}
