package io.flix.bench;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * How fast the CPU backend applies update batches with one thread and with all of them, in one run, so that the
 * gain of applying a batch on every core shows as a ratio. For each index size, an index of that many random keys
 * is built with one thread and with all; then both receive the same sequence of unsorted upsert batches of random
 * keys (nearly all new: a load), one batch size after another, then the same delete batches (half of their keys
 * stored). Each row: the median milliseconds of one call and the keys a second over all calls; the summary's ratio is
 * all threads over one. After each phase the two indexes must hold the same number of keys.
 *
 * <pre>
 * io.flix.bench.ApplyBench [--index-sizes 2^22,2^24] [--batch-sizes 2^14,2^16,2^18] [--keys-per-size 2^22]
 *                          [--threads N] [--seed 42] [--out apply.csv]
 * </pre>
 * {@code --keys-per-size}: keys upserted per batch size and thread count (as many calls as that takes, at least 5);
 * {@code --threads}: the "all" count, all cores by default.
 */
public final class ApplyBench {

    private ApplyBench() {
    }

    public static void main(String[] args) throws IOException {
        List<Integer> indexSizes = List.of(1 << 22, 1 << 24);
        List<Integer> batchSizes = List.of(1 << 14, 1 << 16, 1 << 18);
        int keysPerSize = 1 << 22;
        int all = Runtime.getRuntime().availableProcessors();
        long seed = 42;
        Path out = Path.of("apply.csv");
        for (int i = 0; i < args.length; i++) {
            final String value = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--index-sizes" -> indexSizes = sizes(value);
                case "--batch-sizes" -> batchSizes = sizes(value);
                case "--keys-per-size" -> keysPerSize = size(value);
                case "--threads" -> all = size(value);
                case "--seed" -> seed = Long.parseLong(value);
                case "--out" -> out = Path.of(value);
                default -> throw new IllegalArgumentException("unknown option " + args[i] + "; options: --index-sizes, "
                        + "--batch-sizes, --keys-per-size, --threads, --seed, --out");
            }
            i++;
        }
        final List<String> rows = new ArrayList<>();
        rows.add("index_size,operation,batch_size,threads,calls,median_ms,keys_per_sec");
        final List<String> summary = new ArrayList<>();
        for (int indexSize : indexSizes) {
            final int[] threadCounts = all > 1 ? new int[] {1, all} : new int[] {1};
            final double[][] rates = new double[threadCounts.length][];
            final long[] sizes = new long[threadCounts.length];
            for (int t = 0; t < threadCounts.length; t++) {
                final List<Double> r = new ArrayList<>();
                try (FlixIndex index = FlixIndex.open(FlixConfig.builder().backend(Backend.CPU)
                        .threads(threadCounts[t]).build())) {
                    final SplittableRandom random = new SplittableRandom(seed);
                    final long[] keys = randomKeys(random, indexSize);
                    final long[] values = valuesFor(keys.length);
                    index.build(keys, values, keys.length, false);
                    warmUp(index, new SplittableRandom(seed + 1));
                    for (int batchSize : batchSizes) {
                        for (String op : new String[] {"upsert", "delete"}) {
                            final SplittableRandom batches = new SplittableRandom(seed + batchSize);
                            final int calls = Math.max(5, keysPerSize / batchSize);
                            final long[] times = new long[calls];
                            final long[] batch = new long[batchSize];
                            final long[] batchValues = valuesFor(batchSize);
                            long total = 0;
                            for (int c = 0; c < calls; c++) {
                                for (int i = 0; i < batchSize; i++) {
                                    batch[i] = op.equals("delete") && (i & 1) == 0
                                            ? keys[batches.nextInt(keys.length)] : batches.nextLong();
                                }
                                final long start = System.nanoTime();
                                if (op.equals("upsert")) {
                                    index.upsert(batch, batchValues, batchSize, false);
                                } else {
                                    index.delete(batch, batchSize, false);
                                }
                                times[c] = System.nanoTime() - start;
                                total += times[c];
                            }
                            Arrays.sort(times);
                            final double median = times[calls / 2] / 1e6;
                            final double rate = (double) calls * batchSize / (total / 1e9);
                            r.add(rate);
                            rows.add(String.format(Locale.ROOT, "%d,%s,%d,%d,%d,%.3f,%.0f", indexSize, op, batchSize,
                                    threadCounts[t], calls, median, rate));
                            System.out.println(rows.get(rows.size() - 1));
                        }
                    }
                    sizes[t] = index.size();
                }
                rates[t] = r.stream().mapToDouble(Double::doubleValue).toArray();
            }
            if (threadCounts.length == 2) {
                if (sizes[0] != sizes[1]) {
                    throw new IllegalStateException("one thread and " + all + " threads end with different sizes: "
                            + sizes[0] + " and " + sizes[1]);
                }
                int k = 0;
                for (int batchSize : batchSizes) {
                    for (String op : new String[] {"upsert", "delete"}) {
                        summary.add(String.format(Locale.ROOT,
                                "index 2^%d, %s batches of 2^%d: %.2f M keys/s on 1 thread, %.2f M/s on %d, %.2fx",
                                log2(indexSize), op, log2(batchSize), rates[0][k] / 1e6, rates[1][k] / 1e6, all,
                                rates[1][k] / rates[0][k]));
                        k++;
                    }
                }
            }
        }
        Files.write(out, rows);
        System.out.println();
        summary.forEach(System.out::println);
        System.out.println("rows: " + out.toAbsolutePath());
    }

    /** A short unreported load, so that the timed calls run compiled code. */
    private static void warmUp(FlixIndex index, SplittableRandom random) {
        final int n = 1 << 14;
        final long[] batch = new long[n];
        final long[] values = valuesFor(n);
        final long until = System.nanoTime() + 2_000_000_000L;
        while (System.nanoTime() < until) {
            for (int i = 0; i < n; i++) {
                batch[i] = random.nextLong();
            }
            index.upsert(batch, values, n, false);
            index.delete(batch, n, false);
        }
    }

    private static long[] randomKeys(SplittableRandom random, int n) {
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = random.nextLong();
        }
        return keys;
    }

    private static long[] valuesFor(int n) {
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            values[i] = i + 1;
        }
        return values;
    }

    private static int log2(int n) {
        return 31 - Integer.numberOfLeadingZeros(n);
    }

    private static List<Integer> sizes(String list) {
        final List<Integer> sizes = new ArrayList<>();
        for (String s : list.split(",")) {
            sizes.add(size(s.trim()));
        }
        return sizes;
    }

    static int size(String s) {
        if (s == null) {
            throw new IllegalArgumentException("an option lacks its value");
        }
        final int n = s.startsWith("2^") ? 1 << Integer.parseInt(s.substring(2)) : Integer.parseInt(s);
        if (n < 1) {
            throw new IllegalArgumentException("sizes must be >= 1: " + s);
        }
        return n;
    }
}
