package io.flix.flink.dimension;

import io.flix.flink.payload.PayloadStore;
import io.flix.index.FlixIndex;
import io.flix.index.MirroredIndex;

import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A dimension whose index is mirrored over GPU replicas (faked on the CPU): each reading thread's lookups go to one
 * replica, gathered there with those of the other threads of that replica; the threads spread over the replicas;
 * every update reaches every replica.
 */
class LocalDimensionReplicasTest {

    /** A safety net for threads that should have ended long before; never what a test asserts. */
    private static final long STUCK_MINUTES = 5;
    private static final int THREADS = 4;
    private static final int KEYS_PER_THREAD = 1_000;

    private static byte[] serialized(String name) throws IOException {
        final DataOutputSerializer out = new DataOutputSerializer(16);
        StringSerializer.INSTANCE.serialize(name, out);
        return out.getCopyOfBuffer();
    }

    @Test
    void eachReadingThreadIsAnsweredByOneReplicaAndTheThreadsSpreadOverThem() throws Exception {
        final FakeGpuReplica device0 = new FakeGpuReplica(0);
        final FakeGpuReplica device1 = new FakeGpuReplica(1);
        final MirroredIndex mirror = new MirroredIndex(List.of(device0, device1));
        try (LocalDimension<String> dimension = new LocalDimension<>("'names'", mirror,
                PayloadStore.of(StringSerializer.INSTANCE, 16), 16)) {
            assertEquals(List.of(0, 1), dimension.devices());
            final int keys = THREADS * KEYS_PER_THREAD;
            final SerializedUpdates updates = new SerializedUpdates(keys);
            for (int k = 0; k < keys; k++) {
                final byte[] name = serialized("name-" + k);
                updates.upsertView(k * 2L, name, 0, name.length);
            }
            dimension.apply(updates);
            assertTrue(device0.updates.get() > 0, "the update reached device 0");
            assertEquals(device0.updates.get(), device1.updates.get(), "every update reached both replicas");
            // the apply looks up the keys it replaces, on the applying thread's replica: not the readers' lookups
            device0.keysAsked.clear();
            device1.keysAsked.clear();

            final Map<Integer, Integer> replicaOfThread = new ConcurrentHashMap<>();
            final Map<Integer, Throwable> failures = new ConcurrentHashMap<>();
            final CyclicBarrier start = new CyclicBarrier(THREADS);
            final List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                final int thread = t;
                threads.add(new Thread(() -> {
                    try {
                        start.await(STUCK_MINUTES, TimeUnit.MINUTES);
                        readOwnKeys(dimension, thread);
                        replicaOfThread.put(thread, mirror.replicaOfCurrentThread());
                    } catch (Throwable e) {
                        failures.put(thread, e);
                    }
                }, "reader-" + t));
            }
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join(TimeUnit.MINUTES.toMillis(STUCK_MINUTES));
                assertTrue(!t.isAlive(), t.getName() + " still runs");
            }
            assertEquals(Map.of(), failures);

            final List<FakeGpuReplica> replicas = List.of(device0, device1);
            final Map<Integer, Integer> threadsPerReplica = new TreeMap<>();
            for (int t = 0; t < THREADS; t++) {
                final Set<Long> own = ownKeys(t);
                final int replica = replicaOfThread.get(t);
                threadsPerReplica.merge(replica, 1, Integer::sum);
                assertTrue(replicas.get(replica).keysAsked.containsAll(own),
                        "reader-" + t + "'s keys were not all asked of its replica " + replica);
                final Set<Long> elsewhere = new HashSet<>(replicas.get(1 - replica).keysAsked);
                elsewhere.retainAll(own);
                assertTrue(elsewhere.isEmpty(), "reader-" + t + " (replica " + replica + ") asked " + elsewhere.size()
                        + " of its keys of the other replica");
            }
            assertEquals(Map.of(0, 2, 1, 2), threadsPerReplica, "four readers over two replicas");
        }
    }

    /** Thread {@code t}'s keys: the stored ones (even) and absent ones (odd) of its slice. */
    private static Set<Long> ownKeys(int t) {
        final Set<Long> keys = new HashSet<>();
        for (int i = 0; i < KEYS_PER_THREAD; i++) {
            keys.add((t * (long) KEYS_PER_THREAD + i) * 2);
            keys.add((t * (long) KEYS_PER_THREAD + i) * 2 + 1);
        }
        return keys;
    }

    private static void readOwnKeys(LocalDimension<String> dimension, int t) throws Exception {
        final int batch = 100;
        for (int from = 0; from < KEYS_PER_THREAD; from += batch) {
            final long[] stored = new long[batch];
            final long[] absent = new long[batch];
            for (int i = 0; i < batch; i++) {
                stored[i] = (t * (long) KEYS_PER_THREAD + from + i) * 2;
                absent[i] = stored[i] + 1;
            }
            final String[] names = dimension.read((lookups, payloads) -> {
                final long[] values = new long[batch];
                lookups.get(stored, batch, values);
                final String[] out = new String[batch];
                final PayloadStore.Reader<String> reader = payloads.reader();
                for (int i = 0; i < batch; i++) {
                    out[i] = values[i] == FlixIndex.NOT_FOUND ? null : reader.payload(values[i], stored[i]);
                }
                return out;
            });
            for (int i = 0; i < batch; i++) {
                assertEquals("name-" + stored[i] / 2, names[i], "key " + stored[i]);
            }
            final long[] floorKeys = dimension.read((lookups, payloads) -> {
                final long[] found = new long[batch];
                lookups.floor(absent, batch, found, new long[batch]);
                return found;
            });
            for (int i = 0; i < batch; i++) {
                assertEquals(stored[i], floorKeys[i], "floor of " + absent[i]);
            }
        }
    }
}
