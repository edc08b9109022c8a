package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.MirroredIndex;
import io.flix.index.RangeResult;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A mirror of GPU indexes, one replica per visible CUDA device (two on device 0 where only one is visible), against
 * a TreeMap under random updates, with lookups from one thread per replica at once so that every replica answers.
 */
class GpuMirroredIndexTest {

    /** A safety net for threads that should have ended long before; never what a test asserts. */
    private static final long STUCK_MINUTES = 5;

    @BeforeEach
    void assumeGpu() {
        assumeTrue(GpuSupport.isAvailable(), GpuSupport::unavailableReason);
    }

    /** One config per visible device; two on device 0 where only one is visible. */
    static List<FlixConfig> everyDevice(FlixConfig.Builder config) {
        final int count = Backend.GPU.devices();
        final List<FlixConfig> configs = new ArrayList<>();
        for (int d = 0; d < Math.max(2, count); d++) {
            configs.add(config.backend(Backend.GPU).device(d % count).build());
        }
        return configs;
    }

    @Test
    void theDriversDeviceCountIsWhatTheBackendReports() {
        assertEquals(GpuRuntime.deviceCount(), Backend.GPU.devices());
        assertEquals(GpuRuntime.deviceCount(), Backend.AUTO.devices());
        assertEquals(0, Backend.CPU.devices());
    }

    @Test
    void aMirrorOnEveryDeviceAnswersAsATreeMap() throws Exception {
        final int count = Backend.GPU.devices();
        final SplittableRandom rnd = new SplittableRandom(71);
        final TreeMap<Long, Long> oracle = new TreeMap<>();
        try (MirroredIndex mirror = MirroredIndex.open(everyDevice(FlixConfig.builder()))) {
            final Set<Integer> devices = new HashSet<>(mirror.devices());
            assertEquals(IntStream.range(0, count).boxed().collect(java.util.stream.Collectors.toSet()), devices,
                    "the replicas' devices");
            for (FlixIndex replica : mirror.replicas()) {
                assertTrue(replica instanceof GpuFlixIndex, replica::toString);
            }
            final long[] universe = new long[50_000];
            for (int i = 0; i < universe.length; i++) {
                universe[i] = i < 3 ? new long[] {Long.MIN_VALUE, 0, Long.MAX_VALUE}[i] : rnd.nextLong();
            }
            final int initial = 30_000;
            final long[] values = new long[initial];
            for (int i = 0; i < initial; i++) {
                values[i] = rnd.nextLong(0, Long.MAX_VALUE);
                oracle.put(universe[i], values[i]);
            }
            mirror.build(universe, values, initial);
            for (int round = 0; round < 30; round++) {
                final int n = rnd.nextInt(1, 20_000);
                final long[] keys = new long[n];
                final long[] vals = new long[n];
                for (int i = 0; i < n; i++) {
                    keys[i] = universe[rnd.nextInt(universe.length)];
                    vals[i] = rnd.nextLong(0, Long.MAX_VALUE);
                }
                switch (round % 5) {
                    case 0, 1, 2 -> {
                        mirror.upsert(keys, vals, n);
                        for (int i = 0; i < n; i++) {
                            oracle.put(keys[i], vals[i]);
                        }
                    }
                    case 3 -> {
                        mirror.delete(keys, n);
                        for (int i = 0; i < n; i++) {
                            oracle.remove(keys[i]);
                        }
                    }
                    default -> mirror.restructure();
                }
                assertEquals(oracle.size(), mirror.size(), "size after round " + round);
                lookUpOnEveryReplica(mirror, oracle, universe, round);
            }
        }
    }

    /** One thread per replica at once; each checks get, floor, ceiling and range against the oracle. */
    private static void lookUpOnEveryReplica(MirroredIndex mirror, TreeMap<Long, Long> oracle, long[] universe,
                                             int round) throws Exception {
        final int threads = mirror.replicas().size();
        final ExecutorService pool = Executors.newFixedThreadPool(threads);
        final CyclicBarrier start = new CyclicBarrier(threads);
        final Map<Integer, Boolean> replicasUsed = new ConcurrentHashMap<>();
        try {
            final List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                final long seed = round * 100L + t;
                done.add(pool.submit(() -> {
                    start.await(STUCK_MINUTES, TimeUnit.MINUTES);
                    check(mirror, oracle, universe, new SplittableRandom(seed), "round " + round);
                    replicasUsed.put(mirror.replicaOfCurrentThread(), true);
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(STUCK_MINUTES, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        // each round's threads are new: consecutive turns of the round robin, so every replica answers one
        assertEquals(threads, replicasUsed.size(), context(round) + ": replicas that answered " + replicasUsed);
    }

    private static String context(int round) {
        return "round " + round;
    }

    private static void check(FlixIndex index, TreeMap<Long, Long> oracle, long[] universe, SplittableRandom rnd,
                              String context) {
        final int n = 4_096;
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = rnd.nextBoolean() ? universe[rnd.nextInt(universe.length)] : rnd.nextLong();
        }
        final long[] values = new long[n];
        final long[] found = new long[n];
        index.get(keys, n, values);
        for (int i = 0; i < n; i++) {
            final Long expected = oracle.get(keys[i]);
            assertEquals(expected == null ? FlixIndex.NOT_FOUND : expected, values[i], context + ": get " + keys[i]);
        }
        index.floor(keys, n, found, values);
        for (int i = 0; i < n; i++) {
            final Map.Entry<Long, Long> e = oracle.floorEntry(keys[i]);
            assertEquals(e == null ? FlixIndex.NOT_FOUND : e.getValue(), values[i], context + ": floor " + keys[i]);
            assertEquals(e == null ? 0 : e.getKey(), found[i], context + ": floor key of " + keys[i]);
        }
        index.ceiling(keys, n, found, values);
        for (int i = 0; i < n; i++) {
            final Map.Entry<Long, Long> e = oracle.ceilingEntry(keys[i]);
            assertEquals(e == null ? FlixIndex.NOT_FOUND : e.getValue(), values[i], context + ": ceiling " + keys[i]);
            assertEquals(e == null ? 0 : e.getKey(), found[i], context + ": ceiling key of " + keys[i]);
        }
        final int ranges = 256;
        final long[] lo = new long[ranges];
        final long[] hi = new long[ranges];
        for (int i = 0; i < ranges; i++) {
            lo[i] = keys[i];
            hi[i] = lo[i] > Long.MAX_VALUE - (1L << 58) ? Long.MAX_VALUE : lo[i] + (1L << 58);
        }
        final RangeResult result = index.range(lo, hi, ranges, 8);
        for (int i = 0; i < ranges; i++) {
            final List<Long> expected = new ArrayList<>(oracle.subMap(lo[i], true, hi[i], true).keySet());
            final List<Long> expectedKeys = expected.subList(0, Math.min(8, expected.size()));
            final long[] actual = new long[result.count(i)];
            System.arraycopy(result.keys(), result.offsets()[i], actual, 0, actual.length);
            assertArrayEquals(expectedKeys.stream().mapToLong(Long::longValue).toArray(), actual,
                    context + ": range [" + lo[i] + ", " + hi[i] + "]");
        }
    }
}
