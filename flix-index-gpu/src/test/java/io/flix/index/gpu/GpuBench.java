package io.flix.index.gpu;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.RangeResult;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Timings of the GPU backend, host copies included: build of 2^buildLog2 random pairs, then batches of
 * 2^batchLog2 gets, ceilings, upserts and deletes, unsorted and sorted. Medians of several runs.
 * Usage: GpuBench [buildLog2=25] [batchLog2=24] [reps=5]
 */
public final class GpuBench {

    private GpuBench() {
    }

    public static void main(String[] args) {
        final int buildLog2 = args.length > 0 ? Integer.parseInt(args[0]) : 25;
        final int batchLog2 = args.length > 1 ? Integer.parseInt(args[1]) : 24;
        final int reps = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        final int n = 1 << buildLog2;
        final int m = 1 << batchLog2;
        final SplittableRandom rnd = new SplittableRandom(42);
        final long[] keys = new long[n];
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = rnd.nextLong() >>> 1; // non-negative: fresh keys below come from the negative half
            values[i] = i;
        }
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build())) {
            System.out.printf("device %s, build 2^%d, batches 2^%d%n", index.deviceName(), buildLog2, batchLog2);
            final long[] buildTimes = new long[reps];
            for (int r = 0; r < reps; r++) {
                final long t0 = System.nanoTime();
                index.build(keys, values, n);
                buildTimes[r] = System.nanoTime() - t0;
            }
            report("build (unsorted)", n, buildTimes);
            final long[] sortedKeys = keys.clone();
            Arrays.sort(sortedKeys);
            final long[] sortedValues = new long[n];
            for (int r = 0; r < reps; r++) {
                final long t0 = System.nanoTime();
                index.build(sortedKeys, sortedValues, n, true);
                buildTimes[r] = System.nanoTime() - t0;
            }
            report("build (sorted)", n, buildTimes);
            index.build(keys, values, n);
            System.out.println("  " + index.stats());

            final long[] queries = new long[m];
            for (int i = 0; i < m; i++) {
                queries[i] = (i & 1) == 0 ? keys[rnd.nextInt(n)] : rnd.nextLong() >>> 1; // half hits
            }
            final long[] sortedQueries = queries.clone();
            Arrays.sort(sortedQueries);
            final long[] out = new long[m];
            final long[] outKeys = new long[m];
            final long[] times = new long[reps];
            for (boolean sorted : new boolean[] {false, true}) {
                final long[] q = sorted ? sortedQueries : queries;
                for (int r = 0; r < reps; r++) {
                    final long t0 = System.nanoTime();
                    index.get(q, m, out, sorted);
                    times[r] = System.nanoTime() - t0;
                }
                report("get " + (sorted ? "(sorted)" : "(unsorted)"), m, times);
                for (int r = 0; r < reps; r++) {
                    final long t0 = System.nanoTime();
                    index.ceiling(q, m, outKeys, out, sorted);
                    times[r] = System.nanoTime() - t0;
                }
                report("ceiling " + (sorted ? "(sorted)" : "(unsorted)"), m, times);
            }
            final int ranges = 1 << 16;
            final long[] lo = new long[ranges];
            final long[] hi = new long[ranges];
            for (int i = 0; i < ranges; i++) {
                lo[i] = rnd.nextLong() >>> 2;
                hi[i] = lo[i] + (Long.MAX_VALUE / n) * 64; // about 64 keys each
            }
            for (int r = 0; r < reps; r++) {
                final long t0 = System.nanoTime();
                final RangeResult rr = index.range(lo, hi, ranges, 100);
                times[r] = System.nanoTime() - t0;
                if (r == 0) {
                    System.out.printf("  ranges returned %d pairs%n", rr.offsets()[ranges]);
                }
            }
            report("range (2^16 ranges of ~64 keys)", ranges, times);

            // upserts: half replace stored keys, half insert new keys of the same distribution
            for (boolean sorted : new boolean[] {false, true}) {
                for (int r = 0; r < reps; r++) {
                    final long[] uk = new long[m];
                    final long[] uv = new long[m];
                    for (int i = 0; i < m; i++) {
                        uk[i] = (i & 1) == 0 ? keys[rnd.nextInt(n)] : rnd.nextLong() >>> 1;
                        uv[i] = i;
                    }
                    if (sorted) {
                        Arrays.sort(uk);
                    }
                    final long t0 = System.nanoTime();
                    index.upsert(uk, uv, m, sorted);
                    times[r] = System.nanoTime() - t0;
                }
                report("upsert " + (sorted ? "(sorted)" : "(unsorted)"), m, times);
            }
            System.out.println("  " + index.stats());
            for (boolean sorted : new boolean[] {false, true}) {
                for (int r = 0; r < reps; r++) {
                    final long[] dk = new long[m];
                    for (int i = 0; i < m; i++) {
                        dk[i] = keys[rnd.nextInt(n)];
                    }
                    if (sorted) {
                        Arrays.sort(dk);
                    }
                    final long t0 = System.nanoTime();
                    index.delete(dk, m, sorted);
                    times[r] = System.nanoTime() - t0;
                }
                report("delete " + (sorted ? "(sorted)" : "(unsorted)"), m, times);
            }
            System.out.println("  " + index.stats());
            final long t0 = System.nanoTime();
            final long freed = index.restructure();
            System.out.printf("%-36s %9.2f ms  (nodes freed %d)%n", "restructure", (System.nanoTime() - t0) / 1e6,
                    freed);
            System.out.println("  " + index.stats());
            final long[] ek = new long[(int) index.size()];
            final long[] ev = new long[ek.length];
            final long t1 = System.nanoTime();
            final int exported = index.exportFrom(Long.MIN_VALUE, ek, ev);
            final long exportNanos = System.nanoTime() - t1;
            System.out.printf("%-36s %9.2f ms  %8.1f M pairs/s%n", "export (" + exported + " pairs)",
                    exportNanos / 1e6, exported / (exportNanos / 1e3));
            System.out.println("device bytes live " + DeviceBuffer.liveBytes());
            // small batches: latency of one call
            for (int small : new int[] {1 << 10, 1 << 14}) {
                final int smallReps = 101;
                final long[] smallTimes = new long[smallReps];
                final long[] sq = new long[small];
                final long[] sv = new long[small];
                final long[] so = new long[small];
                for (String op : new String[] {"get", "upsert", "delete"}) {
                    for (int r = 0; r < smallReps; r++) {
                        for (int i = 0; i < small; i++) {
                            sq[i] = (i & 1) == 0 ? keys[rnd.nextInt(n)] : rnd.nextLong() >>> 1;
                            sv[i] = i;
                        }
                        final long s0 = System.nanoTime();
                        switch (op) {
                            case "get" -> index.get(sq, small, so);
                            case "upsert" -> index.upsert(sq, sv, small);
                            default -> index.delete(sq, small);
                        }
                        smallTimes[r] = System.nanoTime() - s0;
                    }
                    report(op + " " + small + " (unsorted)", small, smallTimes);
                }
            }
            // a shifted distribution: every new key below all stored ones, so one bucket takes the whole batch
            index.autoRestructure(false);
            final int skewed = m / 16;
            final long[] sk = new long[skewed];
            final long[] sv = new long[skewed];
            for (int i = 0; i < skewed; i++) {
                sk[i] = -(rnd.nextLong() >>> 1) - 1;
                sv[i] = i;
            }
            final long t2 = System.nanoTime();
            index.upsert(sk, sv, skewed);
            System.out.printf("%-36s %9.2f ms%n", "upsert " + skewed + " into one bucket", (System.nanoTime() - t2) / 1e6);
            System.out.println("  " + index.stats());
            final long t3 = System.nanoTime();
            index.get(sk, skewed, new long[skewed]);
            System.out.printf("%-36s %9.2f ms%n", "get " + skewed + " from that bucket's chain", (System.nanoTime() - t3) / 1e6);
            final long t4 = System.nanoTime();
            index.restructure();
            System.out.printf("%-36s %9.2f ms%n", "restructure", (System.nanoTime() - t4) / 1e6);
            final long t5 = System.nanoTime();
            index.get(sk, skewed, new long[skewed]);
            System.out.printf("%-36s %9.2f ms%n", "get " + skewed + " after restructure", (System.nanoTime() - t5) / 1e6);
            // ever-growing ids in batches of 2^16, restructured automatically when the last bucket's chain grows
            index.autoRestructure(true);
            final int appendBatch = 1 << 16;
            final int appendRounds = 200;
            long nextId = Long.MAX_VALUE / 2;
            final long[] ak = new long[appendBatch];
            final long[] av = new long[appendBatch];
            final long[] appendTimes = new long[appendRounds];
            final long[] recentTimes = new long[appendRounds];
            long longest = 0;
            for (int round = 0; round < appendRounds; round++) {
                for (int i = 0; i < appendBatch; i++) {
                    ak[i] = nextId++;
                    av[i] = i;
                }
                final long a0 = System.nanoTime();
                index.upsert(ak, av, appendBatch, true);
                appendTimes[round] = System.nanoTime() - a0;
                final long a1 = System.nanoTime();
                index.get(ak, appendBatch, out, true);
                recentTimes[round] = System.nanoTime() - a1;
                if (round % 20 == 19) {
                    longest = Math.max(longest, index.stats().longestChain());
                }
            }
            long appendSum = 0;
            long recentSum = 0;
            for (int round = 0; round < appendRounds; round++) {
                appendSum += appendTimes[round];
                recentSum += recentTimes[round];
            }
            report("append upsert 2^16 ids (median)", appendBatch, appendTimes);
            System.out.printf("  mean %.2f ms per append batch, mean %.2f ms per get of the batch, longest chain seen %d%n",
                    appendSum / 1e6 / appendRounds, recentSum / 1e6 / appendRounds, longest);
        }
        System.out.println("device bytes live after close " + DeviceBuffer.liveBytes());
    }

    private static void report(String what, int n, long[] nanos) {
        final long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        final double ms = sorted[sorted.length / 2] / 1e6;
        System.out.printf("%-36s %9.2f ms  %8.1f M ops/s  (min %.2f ms)%n", what, ms, n / (ms * 1e3),
                sorted[0] / 1e6);
    }
}
