package io.flix.bench;

import io.flix.bench.BenchOptions.KeyDistribution;
import io.flix.bench.BenchOptions.XyWorkload;
import it.unimi.dsi.fastutil.longs.LongOpenHashSet;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * The distinct keys of one X/Y workload, drawn once and shared by every structure: the build keys, one batch per
 * insert round and a pool never inserted (so that all-miss lookups always have keys, also after the last insert
 * round). Delete round r removes the keys insert round r added, returning the index to its build.
 *
 * <p>The key range is cut into {@value #SEGMENTS} equal segments; a seeded random {@code X%} of them are hot. Build
 * keys spread evenly over the range; a batch key falls into a hot segment with probability {@code Y%} and into a
 * cold one otherwise (anywhere when every segment is hot), as in the paper's section 5.2.1.
 */
final class WorkloadKeys {

    static final int SEGMENTS = 1024;

    private final int buildSize;
    private final int batchSize;
    private final int rounds;
    /** [build | batch 1 | ... | batch rounds | miss pool], each part in random order. */
    private final long[] keys;

    private WorkloadKeys(int buildSize, int batchSize, int rounds, long[] keys) {
        this.buildSize = buildSize;
        this.batchSize = batchSize;
        this.rounds = rounds;
        this.keys = keys;
    }

    static WorkloadKeys generate(XyWorkload workload, KeyDistribution distribution, int buildSize, int batchSize,
                                 int rounds, long seed) {
        final int total = Math.toIntExact((long) buildSize + (long) (rounds + 1) * batchSize);
        final SplittableRandom random = new SplittableRandom(seed);
        final Domain domain = Domain.of(distribution, workload, total);
        final int[] hot = hotSegments(workload, random);
        final int[] cold = coldSegments(hot);
        final LongOpenHashSet seen = new LongOpenHashSet(total);
        final long[] keys = new long[total];
        for (int i = 0; i < total; i++) {
            long key;
            do {
                if (i < buildSize) {
                    key = domain.key(random.nextInt(SEGMENTS), random);
                } else {
                    final boolean inHot = cold.length == 0 || random.nextInt(100) < workload.y();
                    final int[] segments = inHot ? hot : cold;
                    key = domain.key(segments[random.nextInt(segments.length)], random);
                }
            } while (!seen.add(key));
            keys[i] = key;
        }
        return new WorkloadKeys(buildSize, batchSize, rounds, keys);
    }

    private static int[] hotSegments(XyWorkload workload, SplittableRandom random) {
        final int count = Math.max(1, (int) Math.round(SEGMENTS * workload.x() / 100.0));
        final int[] all = IntStream.range(0, SEGMENTS).toArray();
        for (int i = 0; i < count; i++) { // partial Fisher-Yates
            final int j = i + random.nextInt(SEGMENTS - i);
            final int t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        final int[] hot = Arrays.copyOf(all, count);
        Arrays.sort(hot);
        return hot;
    }

    private static int[] coldSegments(int[] hot) {
        return IntStream.range(0, SEGMENTS).filter(s -> Arrays.binarySearch(hot, s) < 0).toArray();
    }

    long[] buildKeys() {
        return Arrays.copyOf(keys, buildSize);
    }

    /** Keys of insert round {@code round} (1-based), which delete round {@code round} removes again. */
    long[] batch(int round) {
        final int from = buildSize + (round - 1) * batchSize;
        return Arrays.copyOfRange(keys, from, from + batchSize);
    }

    static long[] valuesOf(long[] keys) {
        final long[] values = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            values[i] = valueOf(keys[i]);
        }
        return values;
    }

    /** Any value but the reserved one; derived from the key so that results can be checked. */
    static long valueOf(long key) {
        final long v = key * 0x9E3779B97F4A7C15L + 1;
        return v == Long.MIN_VALUE ? 0 : v;
    }

    /**
     * The state after {@code inserted} insert rounds and then {@code deleted} delete rounds: which batches are
     * present. Present keys, sorted, and the absent ones (batches not present plus the never-inserted pool).
     */
    State state(int inserted, int deleted) {
        final boolean[] batchPresent = new boolean[rounds + 1];
        for (int r = 1; r <= inserted; r++) {
            batchPresent[r] = r > deleted;
        }
        int presentCount = buildSize;
        for (int r = 1; r <= rounds; r++) {
            presentCount += batchPresent[r] ? batchSize : 0;
        }
        final long[] present = new long[presentCount];
        final long[] absent = new long[keys.length - presentCount];
        System.arraycopy(keys, 0, present, 0, buildSize);
        int p = buildSize;
        int a = 0;
        for (int r = 1; r <= rounds; r++) {
            final int from = buildSize + (r - 1) * batchSize;
            if (batchPresent[r]) {
                System.arraycopy(keys, from, present, p, batchSize);
                p += batchSize;
            } else {
                System.arraycopy(keys, from, absent, a, batchSize);
                a += batchSize;
            }
        }
        System.arraycopy(keys, buildSize + rounds * batchSize, absent, a, batchSize);
        Arrays.parallelSort(present);
        Arrays.parallelSort(absent);
        return new State(present, absent);
    }

    /**
     * Keys present in the index and generated keys absent from it, each sorted (distinct from each other).
     */
    record State(long[] present, long[] absent) {

        /** {@code n} keys drawn with repetition from {@code from}. */
        static long[] sample(long[] from, int n, SplittableRandom random) {
            return gather(from, sampleIndexes(from.length, n, random));
        }

        /** {@code n} indexes in {@code [0, length)} drawn with repetition, in parallel slices. */
        static int[] sampleIndexes(int length, int n, SplittableRandom random) {
            final int[] out = new int[n];
            // fixed slices, each with its own generator split off in order: the same sample at any parallelism
            final int slices = (n + SAMPLE_SLICE - 1) / SAMPLE_SLICE;
            final SplittableRandom[] generators = new SplittableRandom[slices];
            for (int s = 0; s < slices; s++) {
                generators[s] = random.split();
            }
            IntStream.range(0, slices).parallel().forEach(s -> {
                final SplittableRandom r = generators[s];
                final int end = Math.min(n, (s + 1) * SAMPLE_SLICE);
                for (int i = s * SAMPLE_SLICE; i < end; i++) {
                    out[i] = r.nextInt(length);
                }
            });
            return out;
        }

        static long[] gather(long[] from, int[] indexes) {
            final long[] out = new long[indexes.length];
            IntStream.range(0, indexes.length).parallel().forEach(i -> out[i] = from[indexes[i]]);
            return out;
        }

        /** Keys drawn per parallel slice of {@link #sampleIndexes}. */
        private static final int SAMPLE_SLICE = 1 << 16;

        /** Index of the smallest present key {@code >= key}, {@code present.length} where none. */
        int ceilingIndex(long key) {
            final int i = Arrays.binarySearch(present, key);
            return i >= 0 ? i : -i - 1;
        }

        /**
         * {@link #ceilingIndex} of every absent key, by merging the two sorted arrays (in parallel slices of the
         * absent keys): one binary search per probe over 10^8 present keys misses the cache at every late step,
         * and the checks of 2^26 successor probes would take minutes.
         */
        int[] absentCeilingIndexes() {
            final int[] out = new int[absent.length];
            final int slice = 1 << 20;
            IntStream.range(0, (absent.length + slice - 1) / slice).parallel().forEach(s -> {
                final int from = s * slice;
                final int to = Math.min(absent.length, from + slice);
                int p = ceilingIndex(absent[from]);
                for (int j = from; j < to; j++) {
                    final long key = absent[j];
                    while (p < present.length && present[p] < key) {
                        p++;
                    }
                    out[j] = p;
                }
            });
            return out;
        }
    }

    /** Where keys may fall: the whole {@code long} range, or a packed range starting at zero. */
    private record Domain(boolean wholeRange, long segmentWidth) {

        static Domain of(KeyDistribution distribution, XyWorkload workload, int total) {
            if (distribution == KeyDistribution.UNIFORM) {
                return new Domain(true, 0);
            }
            // at least twice the keys, and room in the hot segments for twice the keys that go there
            final double spread = Math.max(1.0, (double) workload.y() / workload.x());
            final long span = (long) Math.ceil(2.0 * total * spread);
            return new Domain(false, Math.max(1, (span + SEGMENTS - 1) / SEGMENTS));
        }

        long key(int segment, SplittableRandom random) {
            if (wholeRange) {
                final int shift = Long.SIZE - Integer.numberOfTrailingZeros(SEGMENTS);
                final long offset = ((long) segment << shift) | (random.nextLong() >>> (Long.SIZE - shift));
                return offset + Long.MIN_VALUE; // segment 0 starts at Long.MIN_VALUE
            }
            return segment * segmentWidth + random.nextLong(segmentWidth);
        }
    }
}
