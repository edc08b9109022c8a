package io.flix.flink.dimension;

import io.flix.flink.payload.PayloadStore;
import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The dimension's contract besides concurrency: a failed apply is never read, a closed dimension says so. */
class LocalDimensionTest {

    /** Set by a test: the next upsert of the index throws it. */
    private volatile RuntimeException failNextUpsert;
    private LocalDimension<String> dimension;

    private LocalDimension<String> open() {
        final FlixIndex index = FlixIndex.open(new FlixConfig(Backend.CPU, FlixConfig.DEFAULT_NODE_SIZE,
                FlixConfig.DEFAULT_INITIAL_FILL, 1, 0));
        final FlixIndex failing = (FlixIndex) Proxy.newProxyInstance(FlixIndex.class.getClassLoader(),
                new Class<?>[] {FlixIndex.class}, (proxy, method, args) -> {
                    final RuntimeException failure = failNextUpsert;
                    if (method.getName().equals("upsert") && failure != null) {
                        failNextUpsert = null;
                        throw failure;
                    }
                    try {
                        return method.invoke(index, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        dimension = new LocalDimension<>("'names'", failing, PayloadStore.of(StringSerializer.INSTANCE, 16), 16);
        return dimension;
    }

    @AfterEach
    void close() {
        if (dimension != null) {
            dimension.close();
        }
    }

    /** Applies the updates as one batch: {@code payloads[i]} serialized, or null for a delete. */
    private static void apply(LocalDimension<String> d, long[] keys, byte[][] payloads, int n) throws IOException {
        final SerializedUpdates updates = new SerializedUpdates(n);
        for (int i = 0; i < n; i++) {
            if (payloads[i] == null) {
                updates.delete(keys[i]);
            } else {
                updates.upsertView(keys[i], payloads[i], 0, payloads[i].length);
            }
        }
        d.apply(updates);
    }

    private static byte[] serialized(String name) throws IOException {
        final DataOutputSerializer out = new DataOutputSerializer(16);
        StringSerializer.INSTANCE.serialize(name, out);
        return out.getCopyOfBuffer();
    }

    /** The names of the keys, null where absent, read under the shared lock. */
    private static String[] names(LocalDimension<String> dimension, long... keys) throws Exception {
        return DimensionReads.payloads(dimension, keys).toArray(new String[0]);
    }

    @Test
    void theIndexBytesAreThoseTheLastApplyLeft() throws Exception {
        final LocalDimension<String> d = open();
        apply(d, new long[] {1}, new byte[][] {serialized("a")}, 1);
        final long afterOne = d.indexBytes();
        final int n = 50_000;
        final long[] keys = new long[n];
        final byte[][] payloads = new byte[n][];
        for (int i = 0; i < n; i++) {
            keys[i] = 1_000L + i * 7919L;
            payloads[i] = serialized("p" + i);
        }
        // within the second after the first apply, or not: either way the figure read now is what the index holds
        apply(d, keys, payloads, n);
        assertTrue(d.indexBytes() > afterOne, "the bytes grew with " + n + " keys: " + afterOne + " then "
                + d.indexBytes());
        assertEquals(d.indexBytes(), d.indexBytes(), "a fresh figure stays until the next apply");
    }

    @Test
    void updatesApplyInOrderAndDeleteWithANullPayload() throws Exception {
        final LocalDimension<String> d = open();
        apply(d, new long[] {1, 2, 1}, new byte[][] {serialized("a"), serialized("b"), serialized("a2")}, 3);
        apply(d, new long[] {2}, new byte[][] {null}, 1);
        assertArrayEquals(new String[] {"a2", null}, names(d, 1, 2));
        assertEquals(1, d.size());
        assertEquals(4, d.appliedUpdates());
        assertEquals(2, d.appliedBatches());
        assertEquals("cpu", d.backendName());
    }

    /**
     * A large batch of rows (each upsert goes to the engine after a get of the row it replaces): replaced rows, keys
     * updated several times in the batch, deletes, new keys; the rows read after are those of applying the updates
     * one at a time.
     */
    @Test
    void aLargeBatchOfRowsHasTheEffectOfItsUpdatesOneAtATime() throws Exception {
        final LocalDimension<String> d = open();
        final Map<Long, String> expected = new HashMap<>();
        final int loaded = 40_000;
        final long[] keys = new long[loaded];
        final byte[][] payloads = new byte[loaded][];
        for (int i = 0; i < loaded; i++) {
            keys[i] = i * 31L;
            payloads[i] = serialized("first" + i);
            expected.put(keys[i], "first" + i);
        }
        apply(d, keys, payloads, loaded);

        final SplittableRandom random = new SplittableRandom(20261130);
        final int n = 100_000;
        final long[] batchKeys = new long[n];
        final byte[][] batchPayloads = new byte[n][];
        for (int i = 0; i < n; i++) {
            final long key = random.nextInt(4) == 0 ? random.nextLong(1_000) * 31L : random.nextLong(2 * loaded) * 31L;
            batchKeys[i] = key;
            if (random.nextInt(5) == 0) {
                expected.remove(key);
            } else {
                batchPayloads[i] = serialized("then" + i);
                expected.put(key, "then" + i);
            }
        }
        apply(d, batchKeys, batchPayloads, n);

        assertEquals(expected.size(), d.size());
        final long[] all = new long[2 * loaded];
        final String[] wanted = new String[all.length];
        for (int i = 0; i < all.length; i++) {
            all[i] = i * 31L;
            wanted[i] = expected.get(all[i]);
        }
        assertArrayEquals(wanted, names(d, all));
    }

    /**
     * An apply that fails in the index leaves nothing to read: reads, applies and snapshots fail with the cause
     * until a load replaces the contents.
     */
    @Test
    void aFailedApplyIsNeverReadUntilALoad() throws Exception {
        final LocalDimension<String> d = open();
        apply(d, new long[] {1}, new byte[][] {serialized("a")}, 1);
        final IllegalStateException thrown = new IllegalStateException("the device failed (simulated)");
        failNextUpsert = thrown;
        assertSame(thrown, assertThrows(IllegalStateException.class,
                () -> apply(d, new long[] {2}, new byte[][] {serialized("b")}, 1)));
        assertSame(thrown, d.failure());

        final LocalDimension.FailedException read = assertThrows(LocalDimension.FailedException.class,
                () -> names(d, 1));
        assertSame(thrown, read.getCause());
        assertTrue(read.getMessage().contains("'names'") && read.getMessage().contains("the device failed"),
                read.getMessage());
        assertSame(thrown, assertThrows(LocalDimension.FailedException.class,
                () -> apply(d, new long[] {3}, new byte[][] {serialized("c")}, 1)).getCause());
        assertSame(thrown, assertThrows(LocalDimension.FailedException.class,
                () -> d.writeSnapshot(new ByteArrayOutputStream())).getCause());

        final PayloadStore<String> restored = PayloadStore.of(StringSerializer.INSTANCE, 16);
        final byte[] c = serialized("c");
        final long stored = restored.restore(3, c, 0, c.length);
        d.load(restored, new long[] {3}, new long[] {stored}, 1);
        assertNull(d.failure());
        assertEquals(1, d.loads());
        assertArrayEquals(new String[] {null, "c"}, names(d, 1, 3));
    }

    @Test
    void aClosedDimensionSaysSo() throws Exception {
        final LocalDimension<String> d = open();
        d.close();
        final LocalDimension.ClosedException read = assertThrows(LocalDimension.ClosedException.class,
                () -> names(d, 1));
        assertTrue(read.getMessage().contains("'names'") && read.getMessage().contains("closed"), read.getMessage());
        assertThrows(LocalDimension.ClosedException.class,
                () -> apply(d, new long[] {1}, new byte[][] {serialized("a")}, 1));
        d.close(); // a second close does nothing
    }
}
