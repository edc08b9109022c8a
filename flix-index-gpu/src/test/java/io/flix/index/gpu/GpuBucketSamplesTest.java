package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.GpuTuning;
import io.flix.index.TreeMapOracle;

import java.util.SplittableRandom;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Gets in any order find their bucket through the bucket samples (every {@link KernelContract#BUCKET_SAMPLE_STRIDE}-th
 * bucket's max key) and then one line of bucketMax. Bucket counts on either side of a multiple of the stride, and
 * queries at every bucket's max key, one either side of it and at the extremes, answer as the oracle does; so do
 * they after upserts and deletes, and after the buckets are rebuilt with another count. Both get paths run: the
 * native pipeline and the chunk path (with and without its locality sort). Skips where no GPU is usable.
 */
class GpuBucketSamplesTest {

    /** Built nodes hold 16 keys at the config's fill: n keys make ceil(n / 16) buckets. */
    private static final int KEYS_PER_BUCKET = 16;

    @ParameterizedTest(name = "{0} buckets")
    // 20001 buckets: about 960 thousand queries, several chunks of the pipelined get (two lookup streams in turn)
    @ValueSource(ints = {1, 2, 15, 16, 17, 31, 32, 33, 4095, 4096, 4097, 20_001})
    void getsInAnyOrderFindTheirBucketAtEverySampleSeam(int buckets) {
        Assumptions.assumeTrue(GpuSupport.isAvailable(), GpuSupport.unavailableReason());
        final int n = (buckets - 1) * KEYS_PER_BUCKET + 1;
        // keys 3 apart, about zero: a key's neighbours are misses
        final long[] keys = new long[n];
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = 3L * (i - n / 2);
            values[i] = keys[i] * 7 + 1;
        }
        for (GpuTuning tuning : new GpuTuning[] {GpuTuning.DEFAULTS, GpuTuning.DEFAULTS.withPipelinedGets(false),
                GpuTuning.DEFAULTS.withPipelinedGets(false).withLocalitySortRatio(0)}) {
            final TreeMapOracle oracle = new TreeMapOracle();
            oracle.build(keys, values, n, true);
            try (GpuFlixIndex gpu = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).gpuTuning(tuning)
                    .build())) {
                gpu.build(keys, values, n, true);
                assertEquals(buckets, gpu.stats().buckets(), "buckets built");
                final SplittableRandom random = new SplittableRandom(buckets);
                compare(gpu, oracle, keys, random, tuning + ", as built");
                // updates change nodes, not buckets: the samples stay right
                final int changes = Math.max(1, n / 3);
                final long[] changed = new long[changes];
                final long[] changedValues = new long[changes];
                for (int i = 0; i < changes; i++) {
                    changed[i] = keys[random.nextInt(n)] + random.nextInt(3) - 1;
                    changedValues[i] = -changed[i];
                }
                gpu.upsert(changed, changedValues, changes, false);
                oracle.upsert(changed, changedValues, changes, false);
                gpu.delete(keys, Math.max(1, n / 5), true);
                oracle.delete(keys, Math.max(1, n / 5), true);
                compare(gpu, oracle, keys, random, tuning + ", after updates");
                // a restructure lays the buckets out anew, with another count
                gpu.restructure();
                oracle.restructure();
                compare(gpu, oracle, keys, random, tuning + ", restructured to " + gpu.stats().buckets()
                        + " buckets");
            }
        }
    }

    /** Every key, its neighbours and the extremes, shuffled, got in any order against the oracle. */
    private static void compare(GpuFlixIndex gpu, TreeMapOracle oracle, long[] keys, SplittableRandom random,
                                String where) {
        final int m = keys.length * 3 + 2;
        final long[] queries = new long[m];
        for (int i = 0; i < keys.length; i++) {
            queries[3 * i] = keys[i];
            queries[3 * i + 1] = keys[i] - 1;
            queries[3 * i + 2] = keys[i] + 1;
        }
        queries[m - 2] = Long.MIN_VALUE;
        queries[m - 1] = Long.MAX_VALUE;
        for (int i = m - 1; i > 0; i--) {
            final int j = random.nextInt(i + 1);
            final long t = queries[i];
            queries[i] = queries[j];
            queries[j] = t;
        }
        final long[] want = new long[m];
        final long[] got = new long[m];
        oracle.get(queries, m, want, false);
        gpu.get(queries, m, got, false);
        assertArrayEquals(want, got, where);
        if (!gpu.tuning().pipelinedGets()) {
            assertFalse(gpu.lastLookupPipelined(), where + ": the chunk path");
        }
    }
}
