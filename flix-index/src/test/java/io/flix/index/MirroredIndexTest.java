package io.flix.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * What a {@link MirroredIndex} adds to the index contract (which {@link MirroredIndexConformanceTest} checks): where
 * each thread's lookups go, that an update reaches every replica before any lookup sees it, refusals up front, and
 * the refusal of every call once the replicas may differ.
 */
class MirroredIndexTest {

    /** A safety net for threads that should have ended long before; never what a test asserts. */
    private static final long STUCK_MINUTES = 5;

    private static List<RecordingReplica> replicas(int n) {
        final List<RecordingReplica> replicas = new ArrayList<>();
        for (int d = 0; d < n; d++) {
            replicas.add(new RecordingReplica(Backend.GPU, d));
        }
        return replicas;
    }

    /** Runs each task on a thread of its own, named by the task's name, all started together; rethrows a failure. */
    private static void onThreads(Map<String, Executable> tasks) throws Exception {
        final List<Thread> threads = new ArrayList<>();
        final Map<String, Throwable> failures = new ConcurrentHashMap<>();
        final CyclicBarrier start = new CyclicBarrier(tasks.size());
        tasks.forEach((name, task) -> threads.add(new Thread(() -> {
            try {
                start.await(STUCK_MINUTES, TimeUnit.MINUTES);
                task.execute();
            } catch (Throwable t) {
                failures.put(name, t);
            }
        }, name)));
        threads.forEach(Thread::start);
        for (Thread t : threads) {
            t.join(TimeUnit.MINUTES.toMillis(STUCK_MINUTES));
            assertTrue(!t.isAlive(), t.getName() + " still runs after " + STUCK_MINUTES + " minutes");
        }
        for (Throwable failure : failures.values()) {
            if (failure instanceof Exception e) {
                throw e;
            }
            throw (Error) failure;
        }
    }

    // ---------------------------------------------------------------- routing

    @Test
    void eachThreadKeepsOneReplicaAndTheThreadsSpreadRoundRobin() throws Exception {
        final List<RecordingReplica> replicas = replicas(2);
        try (MirroredIndex mirror = new MirroredIndex(replicas)) {
            mirror.build(new long[] {1, 5, 9}, new long[] {10, 50, 90}, 3);
            final Map<String, Integer> routed = new ConcurrentHashMap<>();
            final Map<String, Executable> tasks = new HashMap<>();
            for (int t = 0; t < 5; t++) {
                tasks.put("lookups-" + t, () -> {
                    final long[] values = new long[2];
                    final long[] keys = new long[2];
                    for (int i = 0; i < 20; i++) {
                        mirror.get(new long[] {1, 9}, 2, values);
                        assertArrayEquals(new long[] {10, 90}, values);
                        mirror.floor(new long[] {6, 0}, 2, keys, values);
                        assertArrayEquals(new long[] {5, 0}, keys);
                        assertEquals(1, mirror.range(new long[] {2}, new long[] {8}, 1, 4).count(0));
                        assertEquals(3, mirror.export().size());
                    }
                    routed.put(Thread.currentThread().getName(), mirror.replicaOfCurrentThread());
                });
            }
            onThreads(tasks);
            final Set<String> seen = new HashSet<>();
            for (int r = 0; r < 2; r++) {
                for (String thread : replicas.get(r).lookupThreads) {
                    assertEquals(r, routed.get(thread), thread + "'s lookups reached replica " + r);
                    assertTrue(seen.add(thread), thread + "'s lookups reached both replicas");
                }
            }
            assertEquals(routed.keySet(), seen, "every thread's lookups reached a replica");
            final Map<Integer, Integer> threadsPerReplica = new TreeMap<>();
            routed.values().forEach(r -> threadsPerReplica.merge(r, 1, Integer::sum));
            assertEquals(Map.of(0, 3, 1, 2), threadsPerReplica, "five threads round robin over two replicas");
        }
    }

    @Test
    void updatesReachEveryReplicaAndSizeAndStatsAreTheFirstReplicas() {
        final List<RecordingReplica> replicas = replicas(3);
        try (MirroredIndex mirror = new MirroredIndex(replicas)) {
            assertEquals(List.of(0, 1, 2), mirror.devices());
            assertEquals(-1, mirror.device(), "a mirror lives on no one device");
            assertEquals(Backend.GPU, mirror.backend());
            mirror.build(new long[] {3, 1, 2}, new long[] {30, 10, 20}, 3);
            mirror.upsert(new long[] {4, 1}, new long[] {40, 11}, 2);
            mirror.delete(new long[] {2}, 1);
            mirror.restructure();
            for (RecordingReplica r : replicas) {
                assertEquals(Map.of(1L, 11L, 3L, 30L, 4L, 40L), r.contents().contents());
                assertEquals(4, r.updates.get());
            }
            assertEquals(3, mirror.size());
            assertEquals(1000L, mirror.stats().bytes(), "stats are the first replica's");
        }
        replicas.forEach(r -> assertTrue(r.isClosed(), "close closes every replica"));
    }

    // ---------------------------------------------------------------- refusals

    @Test
    void badInputIsRefusedBeforeAnyReplicaChanges() {
        final List<RecordingReplica> replicas = replicas(2);
        try (MirroredIndex mirror = new MirroredIndex(replicas)) {
            mirror.build(new long[] {1}, new long[] {10}, 1);
            final IllegalArgumentException reserved = assertThrows(IllegalArgumentException.class,
                    () -> mirror.upsert(new long[] {2, 3}, new long[] {20, FlixIndex.NOT_FOUND}, 2));
            assertEquals("values[1] is NOT_FOUND (Long.MIN_VALUE), which is reserved", reserved.getMessage());
            final IllegalArgumentException unsorted = assertThrows(IllegalArgumentException.class,
                    () -> mirror.delete(new long[] {5, 4}, 2, true));
            assertTrue(unsorted.getMessage().startsWith("keys are not sorted as promised"), unsorted::getMessage);
            assertThrows(IllegalArgumentException.class, () -> mirror.build(null, new long[1], 1));
            for (RecordingReplica r : replicas) {
                assertEquals(1, r.updates.get(), "a refused update reached a replica");
                assertEquals(List.of(1L), r.keys());
            }
            final long[] out = new long[1];
            mirror.get(new long[] {1}, 1, out);
            assertEquals(10, out[0], "a refused update leaves the mirror usable");
        }
    }

    @Test
    void aReplicaFailingMidUpdateRefusesEveryCallUntilABuildResetsTheReplicas() {
        final List<RecordingReplica> replicas = replicas(2);
        try (MirroredIndex mirror = new MirroredIndex(replicas)) {
            mirror.build(new long[] {1, 2}, new long[] {10, 20}, 2);
            replicas.get(1).failNextUpdate();
            final IllegalStateException failed = assertThrows(IllegalStateException.class,
                    () -> mirror.upsert(new long[] {3, 4}, new long[] {30, 40}, 2));
            assertTrue(failed.getMessage().contains("upsert failed on replica(s) [1] of 2"), failed::getMessage);
            assertTrue(failed.getMessage().contains("device 1 faulted halfway through an upsert"), failed::getMessage);
            assertEquals(List.of(1L, 2L, 3L, 4L), replicas.get(0).keys());
            assertEquals(List.of(1L, 2L, 3L), replicas.get(1).keys(), "the replicas differ now");

            final List<Executable> refused = List.of(
                    () -> mirror.get(new long[] {3}, 1, new long[1]),
                    () -> mirror.floor(new long[] {3}, 1, new long[1], new long[1]),
                    () -> mirror.ceiling(new long[] {3}, 1, new long[1], new long[1]),
                    () -> mirror.range(new long[] {0}, new long[] {9}, 1, 9),
                    () -> mirror.exportFrom(0, new long[4], new long[4]),
                    mirror::export,
                    mirror::size,
                    mirror::stats,
                    () -> mirror.upsert(new long[] {5}, new long[] {50}, 1),
                    () -> mirror.delete(new long[] {1}, 1),
                    mirror::restructure);
            for (Executable call : refused) {
                final IllegalStateException e = assertThrows(IllegalStateException.class, call);
                assertTrue(e.getMessage().contains("may differ") && e.getMessage().contains("device 1 faulted"),
                        e::getMessage);
            }
            assertEquals(List.of(1L, 2L, 3L, 4L), replicas.get(0).keys(), "a refused call changed a replica");

            mirror.build(new long[] {7, 8}, new long[] {70, 80}, 2);
            for (RecordingReplica r : replicas) {
                assertEquals(List.of(7L, 8L), r.keys());
            }
            final long[] out = new long[2];
            mirror.get(new long[] {7, 8}, 2, out);
            assertArrayEquals(new long[] {70, 80}, out);
            mirror.delete(new long[] {7}, 1);
            assertEquals(1, mirror.size());
        }
    }

    @Test
    void everyReplicaFailingStillRefusesLaterCalls() {
        final List<RecordingReplica> replicas = replicas(2);
        try (MirroredIndex mirror = new MirroredIndex(replicas)) {
            replicas.forEach(RecordingReplica::failNextUpdate);
            final IllegalStateException failed = assertThrows(IllegalStateException.class,
                    () -> mirror.delete(new long[] {1, 2}, 2));
            assertTrue(failed.getMessage().contains("delete failed on replica(s) [0, 1] of 2"), failed::getMessage);
            assertEquals(1, failed.getSuppressed().length, "the second replica's failure is kept");
            assertThrows(IllegalStateException.class, mirror::size);
        }
    }

    @Test
    void replicasMustBeDistinctEmptyAndOfOneBackend() {
        assertThrows(IllegalArgumentException.class, () -> new MirroredIndex(List.of()));
        assertThrows(IllegalArgumentException.class, () -> new MirroredIndex(null));
        final RecordingReplica one = new RecordingReplica(Backend.GPU, 0);
        assertEquals("replica 1 is replica 0 again: each replica must be an index of its own",
                assertThrows(IllegalArgumentException.class, () -> new MirroredIndex(List.of(one, one))).getMessage());
        assertEquals("replica 1 is on the CPU backend, replica 0 on the GPU: a mirror's replicas share one backend",
                assertThrows(IllegalArgumentException.class,
                        () -> new MirroredIndex(List.of(one, new RecordingReplica(Backend.CPU, -1)))).getMessage());
        final RecordingReplica full = new RecordingReplica(Backend.GPU, 1);
        full.build(new long[] {1}, new long[] {1}, 1);
        assertEquals("replica 1 holds 1 keys: a mirror starts from empty replicas, so that they hold the same pairs",
                assertThrows(IllegalArgumentException.class, () -> new MirroredIndex(List.of(one, full))).getMessage());
    }

    @Test
    void openClosesTheReplicasOpenedWhereAnotherFailsToOpen() {
        final List<RecordingReplica> opened = new ArrayList<>();
        final FlixConfig device0 = FlixConfig.builder().backend(Backend.GPU).device(0).build();
        final FlixConfig device1 = FlixConfig.builder().backend(Backend.GPU).device(1).build();
        final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> MirroredIndex.open(List.of(device0, device1), config -> {
                    if (config.device() == 1) {
                        throw new IllegalStateException("device 1 is busy");
                    }
                    final RecordingReplica r = new RecordingReplica(Backend.GPU, config.device());
                    opened.add(r);
                    return r;
                }));
        assertEquals("device 1 is busy", e.getMessage());
        assertEquals(1, opened.size());
        assertTrue(opened.get(0).isClosed(), "the replica opened first was closed");
    }

    // ---------------------------------------------------------------- lookups during updates

    /**
     * Lookup threads on both replicas run while an updater writes version after version of every key: each lookup
     * sees one version on all its keys, and never an older version than a lookup that ended before it began saw
     * (on whichever replica): no thread sees a replica that another has not yet given it.
     */
    @Test
    void lookupsDuringUpdatesNeverSeeAVersionOlderThanAnotherThreadSaw() throws Exception {
        final FlixConfig cpu = FlixConfig.builder().backend(Backend.CPU).threads(1).build();
        final SplittableRandom rnd = new SplittableRandom(61);
        final int n = 20_000;
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = rnd.nextLong();
        }
        final int versions = 40;
        try (MirroredIndex mirror = MirroredIndex.open(List.of(cpu, cpu))) {
            mirror.build(keys, new long[n], n);
            final AtomicLong newestSeen = new AtomicLong();
            final AtomicBoolean updated = new AtomicBoolean();
            final Set<Integer> replicasUsed = ConcurrentHashMap.newKeySet();
            final AtomicLong lookups = new AtomicLong();
            final Map<String, Executable> tasks = new HashMap<>();
            tasks.put("updater", () -> {
                try {
                    final long[] values = new long[n];
                    for (int v = 1; v <= versions; v++) {
                        Arrays.fill(values, v);
                        mirror.upsert(keys, values, n);
                    }
                } finally {
                    updated.set(true);
                }
            });
            for (int t = 0; t < 4; t++) {
                final long seed = t;
                tasks.put("lookups-" + t, () -> {
                    final SplittableRandom pick = new SplittableRandom(seed);
                    final long[] probe = new long[256];
                    final long[] values = new long[probe.length];
                    boolean last = false;
                    while (!last) {
                        last = updated.get();
                        for (int i = 0; i < probe.length; i++) {
                            probe[i] = keys[pick.nextInt(n)];
                        }
                        final long floor = newestSeen.get();
                        mirror.get(probe, probe.length, values);
                        final long version = values[0];
                        for (long value : values) {
                            assertEquals(version, value, "one lookup saw two versions");
                        }
                        assertTrue(version >= floor, "a lookup saw version " + version + " after another had seen "
                                + floor + " (replica " + mirror.replicaOfCurrentThread() + ")");
                        newestSeen.accumulateAndGet(version, Math::max);
                        lookups.incrementAndGet();
                    }
                    replicasUsed.add(mirror.replicaOfCurrentThread());
                });
            }
            onThreads(tasks);
            assertEquals(Set.of(0, 1), replicasUsed, "lookups ran on both replicas");
            assertEquals(versions, newestSeen.get(), "the last lookups saw the last version");
            System.out.println(lookups.get() + " checked lookups during " + versions + " mirrored upserts");
            final SortedPairs first = mirror.replicas().get(0).export();
            final SortedPairs second = mirror.replicas().get(1).export();
            assertArrayEquals(first.keys(), second.keys());
            assertArrayEquals(first.values(), second.values());
        }
    }

    @Test
    void oneReplicaBehavesAsThatReplica() {
        final RecordingReplica only = new RecordingReplica(Backend.GPU, 0);
        try (MirroredIndex mirror = new MirroredIndex(List.of(only))) {
            only.failNextUpdate();
            final IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> mirror.upsert(new long[] {1, 2}, new long[] {1, 2}, 2));
            assertEquals("device 0 faulted halfway through an upsert", e.getMessage());
            assertSame(only, mirror.replicas().get(0));
            assertEquals(0, mirror.replicaOfCurrentThread());
        }
    }
}
