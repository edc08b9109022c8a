package io.flix.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** The benchmark's command line. */
record BenchOptions(String backend, Path out, boolean quick, int buildSize, int batchSize, int probeSize,
                    int rangeCount, int rangeKeys, int rounds, int warmup, long seed, int threads,
                    List<XyWorkload> workloads, KeyDistribution distribution, List<String> structures,
                    String gpuTiming, boolean plotOnly, List<String> sections, int[] busSizes, int[] latencySizes) {

    /** The parts of a run: the paper's workloads, the end-to-end size sweep against the bus, the latency table. */
    static final List<String> SECTIONS = List.of("paper", "bus", "latency");

    static final String USAGE = """
            usage: Bench --backend cpu|gpu|all --out DIR [--quick] [options]
              --build-size N     keys built before the first round (default: gpu 2^25, cpu and all 2^20)
              --batch-size N     keys inserted per insert round and deleted per delete round
                                 (default: gpu 2^24, cpu and all 2^19)
              --probe-size N     point and successor lookups after each round, each kind
                                 (default: gpu 2^26, cpu and all 2^20)
              --ranges N         range lookups after each round (default: probe size / 16)
              --range-keys N     keys each range spans and returns at most (default 16)
              --rounds N         insert rounds, then as many delete rounds (default 4)
              --workload X/Y[,X/Y...]  Y% of inserted keys go into X% of the key range, the rest anywhere
                                 (default 90/90,25/90,6/90,3/90; 90/90 is uniform)
              --distribution uniform|dense  keys over the whole long range, or packed into [0, 2x the keys
                                 generated), wider where hot segments need room (default uniform)
              --structures A[,B...]  only these: flix, sortedarray (GPU), TreeMap, ConcurrentSkipListMap,
                                 Long2LongOpenHashMap
              --gpu-timing both|end-to-end|resident  GPU structures timed end to end (backend label gpu: Java
                                 arrays in and out), on the device alone (gpu-resident), or both (default both)
              --warmup N         unreported warm-up passes of the first workload at <= 2^16 keys (default 1)
              --seed N           key generator seed (default 42)
              --threads N        threads for the CPU FliX backend (default: available processors)
              --quick            build 2^12, batches 2^10, probes 2^12, no warm-up: a smoke run of seconds
              --sections A[,B...]  parts to run: paper (the workloads above), bus (build, gets, upsert and
                                 ranges end to end at each --bus-sizes, on the GPU beside the bus bound measured in
                                 the same run), latency (one call at each --latency-sizes) (default: all three)
              --bus-sizes N[,N...]  sizes of the bus sweep (default: gpu 2^20,...,2^26; cpu and all 2^16,...,2^20;
                                 quick 2^10,2^12)
              --latency-sizes N[,N...]  micro-batch sizes of the latency table (default 2^14,...,2^17; quick
                                 2^8,2^10)
              --plot-only        run nothing: draw the plots of an earlier run from DIR/results.csv (give the
                                 run's options, for the workloads and probe size in the titles)
              sizes accept 2^k""";

    static final List<String> STRUCTURE_NAMES =
            List.of("flix", "sortedarray", "TreeMap", "ConcurrentSkipListMap", "Long2LongOpenHashMap");

    static BenchOptions parse(String[] args) {
        String backend = null;
        Path out = null;
        boolean quick = false;
        boolean plotOnly = false;
        Integer buildSize = null;
        Integer batchSize = null;
        Integer probeSize = null;
        Integer rangeCount = null;
        int rangeKeys = 16;
        int rounds = 4;
        Integer warmup = null;
        long seed = 42;
        int threads = Runtime.getRuntime().availableProcessors();
        List<XyWorkload> workloads = XyWorkload.PAPER;
        KeyDistribution distribution = KeyDistribution.UNIFORM;
        List<String> structures = STRUCTURE_NAMES;
        String gpuTiming = "both";
        List<String> sections = SECTIONS;
        int[] busSizes = null;
        int[] latencySizes = null;
        for (int i = 0; i < args.length; i++) {
            final String arg = args[i];
            switch (arg) {
                case "--quick" -> quick = true;
                case "--plot-only" -> plotOnly = true;
                case "--backend" -> backend = value(args, ++i, arg);
                case "--out" -> out = Path.of(value(args, ++i, arg));
                case "--build-size" -> buildSize = size(value(args, ++i, arg), arg);
                case "--batch-size" -> batchSize = size(value(args, ++i, arg), arg);
                case "--probe-size" -> probeSize = size(value(args, ++i, arg), arg);
                case "--ranges" -> rangeCount = size(value(args, ++i, arg), arg);
                case "--range-keys" -> rangeKeys = size(value(args, ++i, arg), arg);
                case "--rounds" -> rounds = size(value(args, ++i, arg), arg);
                case "--warmup" -> warmup = count(value(args, ++i, arg), arg);
                case "--seed" -> seed = parseLong(value(args, ++i, arg), arg);
                case "--threads" -> threads = size(value(args, ++i, arg), arg);
                case "--workload", "--workloads" -> workloads = XyWorkload.parseList(value(args, ++i, arg), arg);
                case "--distribution" -> distribution = KeyDistribution.parse(value(args, ++i, arg), arg);
                case "--structures" -> structures = structureList(value(args, ++i, arg), arg);
                case "--gpu-timing" -> gpuTiming = value(args, ++i, arg);
                case "--sections" -> sections = sectionList(value(args, ++i, arg), arg);
                case "--bus-sizes" -> busSizes = sizeList(value(args, ++i, arg), arg);
                case "--latency-sizes" -> latencySizes = sizeList(value(args, ++i, arg), arg);
                default -> throw new IllegalArgumentException("unknown option " + arg);
            }
        }
        if (backend == null || !(backend.equals("cpu") || backend.equals("gpu") || backend.equals("all"))) {
            throw new IllegalArgumentException("--backend must be cpu, gpu or all, was " + backend);
        }
        if (!List.of("both", "end-to-end", "resident").contains(gpuTiming)) {
            throw new IllegalArgumentException("--gpu-timing must be both, end-to-end or resident, was " + gpuTiming);
        }
        if (out == null) {
            throw new IllegalArgumentException("--out DIR is required");
        }
        final boolean paperSizes = backend.equals("gpu");
        final int build = orDefault(buildSize, quick ? 1 << 12 : paperSizes ? 1 << 25 : 1 << 20);
        final int batch = orDefault(batchSize, quick ? 1 << 10 : paperSizes ? 1 << 24 : 1 << 19);
        final int probes = orDefault(probeSize, quick ? 1 << 12 : paperSizes ? 1 << 26 : 1 << 20);
        final BenchOptions o = new BenchOptions(backend, out, quick, build, batch, probes,
                orDefault(rangeCount, Math.max(1, probes / 16)), rangeKeys, rounds,
                orDefault(warmup, quick ? 0 : 1), seed, threads, workloads, distribution, structures, gpuTiming,
                plotOnly, sections, busSizes != null ? busSizes : quick ? powers(10, 12, 2) : paperSizes
                        ? powers(20, 26, 1) : powers(16, 20, 1),
                latencySizes != null ? latencySizes : quick ? powers(8, 10, 2) : powers(14, 17, 1));
        final long generated = (long) o.buildSize() + (long) (o.rounds() + 1) * o.batchSize();
        if (generated > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("--build-size + (--rounds + 1) * --batch-size must stay below 2^31, was "
                    + generated);
        }
        if ((long) o.rangeCount() * o.rangeKeys() > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("--ranges * --range-keys must stay below 2^31");
        }
        return o;
    }

    /** Total keys the generator draws: the build, every insert round and a pool never inserted (for misses). */
    long generatedKeys() {
        return (long) buildSize + (long) (rounds + 1) * batchSize;
    }

    private static List<String> structureList(String text, String option) {
        final List<String> names = new ArrayList<>();
        for (String part : text.split(",")) {
            final String name = STRUCTURE_NAMES.stream().filter(s -> s.equalsIgnoreCase(part.trim())).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException(
                            option + " names " + part + ", known: " + String.join(", ", STRUCTURE_NAMES)));
            names.add(name);
        }
        return List.copyOf(names);
    }

    private static int[] powers(int from, int to, int step) {
        return java.util.stream.IntStream.iterate(from, e -> e <= to, e -> e + step).map(e -> 1 << e).toArray();
    }

    private static int[] sizeList(String text, String option) {
        return java.util.Arrays.stream(text.split(",")).mapToInt(part -> size(part.trim(), option)).toArray();
    }

    private static List<String> sectionList(String text, String option) {
        final List<String> names = new ArrayList<>();
        for (String part : text.split(",")) {
            final String name = part.trim().toLowerCase(Locale.ROOT);
            if (!SECTIONS.contains(name)) {
                throw new IllegalArgumentException(option + " names " + part + ", known: " + String.join(", ", SECTIONS));
            }
            names.add(name);
        }
        return List.copyOf(names);
    }

    private static int orDefault(Integer value, int fallback) {
        return value == null ? fallback : value;
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    private static long parseLong(String text, String option) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " must be a number, was " + text);
        }
    }

    /** A positive int, written plainly or as 2^k. */
    static int size(String text, String option) {
        final long v;
        try {
            v = text.startsWith("2^") ? 1L << Integer.parseInt(text.substring(2)) : Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " must be a number or 2^k, was " + text);
        }
        if (v < 1 || v > Integer.MAX_VALUE - 8 || (text.startsWith("2^") && Integer.parseInt(text.substring(2)) > 30)) {
            throw new IllegalArgumentException(option + " must be in [1, 2^30], was " + text);
        }
        return (int) v;
    }

    private static int count(String text, String option) {
        try {
            final int v = Integer.parseInt(text);
            if (v < 0) {
                throw new IllegalArgumentException(option + " must be >= 0, was " + text);
            }
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " must be a number, was " + text);
        }
    }

    /** How build keys spread over the {@code long} range. */
    enum KeyDistribution {
        /** Anywhere in the whole {@code long} range. */
        UNIFORM,
        /**
         * Packed into {@code [0, 2 * generated keys)}, wider by Y/X where the hot segments need room: neighbours
         * are close, as with sequence ids.
         */
        DENSE;

        static KeyDistribution parse(String text, String option) {
            try {
                return valueOf(text.toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(option + " must be uniform or dense, was " + text);
            }
        }

        String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * The paper's X/Y update workload (section 5.2.1): Y% of the inserted keys fall into hot parts of the key range
     * that together make X% of it; the other keys fall anywhere else.
     */
    record XyWorkload(int x, int y) {
        static final List<XyWorkload> PAPER =
                List.of(new XyWorkload(90, 90), new XyWorkload(25, 90), new XyWorkload(6, 90), new XyWorkload(3, 90));

        XyWorkload {
            if (x < 1 || x > 100 || y < 0 || y > 100) {
                throw new IllegalArgumentException("workload X/Y needs X in [1, 100] and Y in [0, 100], was "
                        + x + "/" + y);
            }
        }

        String label() {
            return "X" + x + "Y" + y;
        }

        static List<XyWorkload> parseList(String text, String option) {
            final List<XyWorkload> list = new ArrayList<>();
            for (String part : text.split(",")) {
                final String[] xy = part.trim().split("/");
                if (xy.length != 2) {
                    throw new IllegalArgumentException(option + " takes X/Y pairs such as 90/90, was " + part);
                }
                try {
                    list.add(new XyWorkload(Integer.parseInt(xy[0].trim()), Integer.parseInt(xy[1].trim())));
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(option + " takes X/Y pairs such as 90/90, was " + part);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(option + ": " + e.getMessage());
                }
            }
            return List.copyOf(list);
        }
    }
}
