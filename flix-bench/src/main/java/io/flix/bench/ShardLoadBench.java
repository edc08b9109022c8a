package io.flix.bench;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * A CPU index loaded from empty, as one index on every thread against the same threads in key-range shards
 * ({@link FlixConfig#shards}), in one run: each loads {@code --keys} keys in unsorted upsert batches of
 * {@code --batch} keys (random keys, or ascending ones appended at the top), then gets every loaded key back in batches
 * of the same size, then answers as many floor, ceiling and range probes (random keys over the loaded span; ranges as
 * wide as {@value #RANGE_SPAN_KEYS} loaded keys on average, at most {@value #RANGE_LIMIT} pairs each). Each line: the
 * rates of each phase; the summary: sharded over one index. Both must end with the same size and the same sums of
 * what each phase answered.
 *
 * <pre>
 * io.flix.bench.ShardLoadBench [--keys 2^24] [--batch 2^21] [--threads N] [--shards N[,M...]]
 *                              [--order random|ascending] [--rounds 1] [--seed 42]
 * </pre>
 * {@code --threads}: the threads of every contestant (all cores by default). {@code --shards}: the shard counts to run
 * beside one index, each a contestant of its own (the thread count by default).
 */
public final class ShardLoadBench {

    private ShardLoadBench() {
    }

    /** Loaded keys a range probe spans on average. */
    static final int RANGE_SPAN_KEYS = 8;
    /** Most pairs a range probe answers. */
    static final int RANGE_LIMIT = 16;

    /** One contestant's run: its rates and what it ended with. */
    record Result(int shards, double loadPerSecond, double getPerSecond, double floorPerSecond,
                  double ceilingPerSecond, double rangePerSecond, long size, long valueSum, long orderedSum) {
    }

    public static void main(String[] args) {
        int keys = 1 << 24;
        int batch = 1 << 21;
        int threads = Runtime.getRuntime().availableProcessors();
        boolean ascending = false;
        int rounds = 1;
        long seed = 42;
        int[] shardCounts = null;
        for (int i = 0; i < args.length; i++) {
            final String value = i + 1 < args.length ? args[i + 1] : null;
            switch (args[i]) {
                case "--keys" -> keys = ApplyBench.size(value);
                case "--batch" -> batch = ApplyBench.size(value);
                case "--threads" -> threads = ApplyBench.size(value);
                case "--shards" -> shardCounts = shardCounts(value);
                case "--order" -> ascending = switch (String.valueOf(value)) {
                    case "random" -> false;
                    case "ascending" -> true;
                    default -> throw new IllegalArgumentException("--order is random or ascending, was " + value);
                };
                case "--rounds" -> rounds = ApplyBench.size(value);
                case "--seed" -> seed = Long.parseLong(value);
                default -> throw new IllegalArgumentException("unknown option " + args[i] + "; options: --keys, "
                        + "--batch, --threads, --shards, --order, --rounds, --seed");
            }
            i++;
        }
        if (shardCounts == null) {
            shardCounts = new int[] {threads};
        }
        final List<String> summary = new ArrayList<>();
        for (int round = 1; round <= rounds; round++) {
            final Result one = run(keys, batch, threads, 1, ascending, seed + round);
            for (int shards : shardCounts) {
                final Result sharded = run(keys, batch, threads, shards, ascending, seed + round);
                if (one.size() != sharded.size() || one.valueSum() != sharded.valueSum()
                        || one.orderedSum() != sharded.orderedSum()) {
                    throw new IllegalStateException("one index and " + shards + " shards disagree: size "
                            + one.size() + " and " + sharded.size() + ", values got back summing to "
                            + one.valueSum() + " and " + sharded.valueSum() + ", floor, ceiling and range answers to "
                            + one.orderedSum() + " and " + sharded.orderedSum());
                }
                summary.add(String.format(Locale.ROOT, "round %d, %s keys: load %.2fx, gets %.2fx, floors %.2fx, "
                                + "ceilings %.2fx, ranges %.2fx (%d shards over one index, %d threads)", round,
                        ascending ? "ascending" : "random", sharded.loadPerSecond() / one.loadPerSecond(),
                        sharded.getPerSecond() / one.getPerSecond(),
                        sharded.floorPerSecond() / one.floorPerSecond(),
                        sharded.ceilingPerSecond() / one.ceilingPerSecond(),
                        sharded.rangePerSecond() / one.rangePerSecond(), shards, threads));
            }
        }
        System.out.println();
        summary.forEach(System.out::println);
    }

    private static int[] shardCounts(String value) {
        final String[] parts = String.valueOf(value).split(",");
        final int[] counts = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            counts[i] = ApplyBench.size(parts[i].trim());
        }
        return counts;
    }

    static Result run(int keys, int batch, int threads, int shards, boolean ascending, long seed) {
        final long[] batchKeys = new long[batch];
        final long[] values = new long[batch];
        final long[] got = new long[batch];
        try (FlixIndex index = FlixIndex.open(FlixConfig.builder().backend(Backend.CPU).threads(threads)
                .shards(shards).build())) {
            SplittableRandom random = new SplittableRandom(seed);
            long loadNanos = 0;
            for (int done = 0; done < keys; done += batch) {
                final int n = Math.min(batch, keys - done);
                fillKeys(batchKeys, n, done, ascending, random);
                for (int i = 0; i < n; i++) {
                    values[i] = done + i + 1;
                }
                final long start = System.nanoTime();
                index.upsert(batchKeys, values, n, false);
                loadNanos += System.nanoTime() - start;
            }
            random = new SplittableRandom(seed); // the same keys again
            long getNanos = 0;
            long valueSum = 0;
            for (int done = 0; done < keys; done += batch) {
                final int n = Math.min(batch, keys - done);
                fillKeys(batchKeys, n, done, ascending, random);
                final long start = System.nanoTime();
                index.get(batchKeys, n, got);
                getNanos += System.nanoTime() - start;
                for (int i = 0; i < n; i++) {
                    valueSum += got[i];
                }
            }
            final long[] probeNanos = new long[3];
            final long orderedSum = probeOrdered(index, keys, batch, ascending, seed, probeNanos);
            final Result result = new Result(shards, keys / (loadNanos / 1e9), keys / (getNanos / 1e9),
                    keys / (probeNanos[0] / 1e9), keys / (probeNanos[1] / 1e9), keys / (probeNanos[2] / 1e9),
                    index.size(), valueSum, orderedSum);
            System.out.printf(Locale.ROOT, "%s keys=%d batch=%d threads=%d shards=%d load %.2f M/s, get %.2f M/s, "
                            + "floor %.2f M/s, ceiling %.2f M/s, range %.2f M/s, size %d%n",
                    ascending ? "ascending" : "random", keys, batch, threads, shards, result.loadPerSecond() / 1e6,
                    result.getPerSecond() / 1e6, result.floorPerSecond() / 1e6, result.ceilingPerSecond() / 1e6,
                    result.rangePerSecond() / 1e6, result.size());
            return result;
        }
    }

    /**
     * Floors, ceilings and ranges of {@code keys} random probes over the loaded span, in batches of {@code batch};
     * their nanoseconds in {@code nanosOut} (floor, ceiling, range) and a sum of every key and value answered.
     */
    private static long probeOrdered(FlixIndex index, int keys, int batch, boolean ascending, long seed,
                                     long[] nanosOut) {
        final long[] probes = new long[batch];
        final long[] ends = new long[batch];
        final long[] keysOut = new long[batch];
        final long[] valuesOut = new long[batch];
        // random keys spread over the whole long range; ascending ones over [0, keys), probed a little past each end
        final long width = ascending ? RANGE_SPAN_KEYS
                : Math.min(Long.MAX_VALUE / RANGE_SPAN_KEYS, Long.divideUnsigned(-1L, keys)) * RANGE_SPAN_KEYS;
        final SplittableRandom random = new SplittableRandom(seed ^ 0x5DEECE66DL);
        long sum = 0;
        RangeResult reuse = null;
        for (int done = 0; done < keys; done += batch) {
            final int n = Math.min(batch, keys - done);
            for (int i = 0; i < n; i++) {
                probes[i] = ascending ? random.nextLong(-RANGE_SPAN_KEYS, keys + RANGE_SPAN_KEYS) : random.nextLong();
                ends[i] = probes[i] > Long.MAX_VALUE - width ? Long.MAX_VALUE : probes[i] + width;
            }
            long start = System.nanoTime();
            index.floor(probes, n, keysOut, valuesOut);
            nanosOut[0] += System.nanoTime() - start;
            sum += Arrays.stream(keysOut, 0, n).sum() * 31 + Arrays.stream(valuesOut, 0, n).sum();
            start = System.nanoTime();
            index.ceiling(probes, n, keysOut, valuesOut);
            nanosOut[1] += System.nanoTime() - start;
            sum += Arrays.stream(keysOut, 0, n).sum() * 37 + Arrays.stream(valuesOut, 0, n).sum();
            start = System.nanoTime();
            reuse = index.range(probes, ends, n, RANGE_LIMIT, reuse);
            nanosOut[2] += System.nanoTime() - start;
            final int pairs = reuse.offsets()[n];
            sum += Arrays.stream(reuse.keys(), 0, pairs).sum() * 41 + Arrays.stream(reuse.values(), 0, pairs).sum()
                    + pairs;
        }
        return sum;
    }

    /** The keys of the batch that starts at the {@code done}-th key: {@code done, done + 1, ...}, or random ones. */
    private static void fillKeys(long[] out, int n, int done, boolean ascending, SplittableRandom random) {
        for (int i = 0; i < n; i++) {
            out[i] = ascending ? done + i : random.nextLong();
        }
    }
}
