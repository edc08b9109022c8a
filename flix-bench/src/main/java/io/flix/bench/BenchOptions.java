package io.flix.bench;

import java.nio.file.Path;

/** The benchmark's command line. */
record BenchOptions(String backend, Path out, int buildSize, int batchSize, int probeSize, int rounds, int warmup,
                    long seed, int threads) {

    static final String USAGE = """
            usage: Bench --backend cpu|gpu|all --out DIR [--quick] [--build-size N] [--batch-size N]
                         [--probe-size N] [--rounds N] [--warmup N] [--seed N] [--threads N]
              sizes accept 2^k; defaults: build 2^22, probes 2^22, update batches 2^21, 3 rounds, 1 warm-up;
              --quick: build 2^12, probes 2^12, batches 2^11, 1 round, no warm-up (a smoke run)""";

    static BenchOptions parse(String[] args) {
        String backend = null;
        Path out = null;
        boolean quick = false;
        Integer buildSize = null;
        Integer batchSize = null;
        Integer probeSize = null;
        Integer rounds = null;
        Integer warmup = null;
        long seed = 42;
        int threads = Runtime.getRuntime().availableProcessors();
        for (int i = 0; i < args.length; i++) {
            final String arg = args[i];
            switch (arg) {
                case "--quick" -> quick = true;
                case "--backend" -> backend = value(args, ++i, arg);
                case "--out" -> out = Path.of(value(args, ++i, arg));
                case "--build-size" -> buildSize = size(value(args, ++i, arg), arg);
                case "--batch-size" -> batchSize = size(value(args, ++i, arg), arg);
                case "--probe-size" -> probeSize = size(value(args, ++i, arg), arg);
                case "--rounds" -> rounds = size(value(args, ++i, arg), arg);
                case "--warmup" -> warmup = count(value(args, ++i, arg), arg);
                case "--seed" -> seed = Long.parseLong(value(args, ++i, arg));
                case "--threads" -> threads = size(value(args, ++i, arg), arg);
                default -> throw new IllegalArgumentException("unknown option " + arg);
            }
        }
        if (backend == null || !(backend.equals("cpu") || backend.equals("gpu") || backend.equals("all"))) {
            throw new IllegalArgumentException("--backend must be cpu, gpu or all, was " + backend);
        }
        if (out == null) {
            throw new IllegalArgumentException("--out DIR is required");
        }
        final BenchOptions o = new BenchOptions(backend, out,
                orDefault(buildSize, quick ? 1 << 12 : 1 << 22),
                orDefault(batchSize, quick ? 1 << 11 : 1 << 21),
                orDefault(probeSize, quick ? 1 << 12 : 1 << 22),
                orDefault(rounds, quick ? 1 : 3),
                orDefault(warmup, quick ? 0 : 1),
                seed, threads);
        if (o.batchSize() > o.buildSize()) {
            throw new IllegalArgumentException("--batch-size " + o.batchSize()
                    + " must not exceed --build-size " + o.buildSize() + " (deletes remove build keys)");
        }
        return o;
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
}
