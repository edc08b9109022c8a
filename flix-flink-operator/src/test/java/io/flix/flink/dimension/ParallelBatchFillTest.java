package io.flix.flink.dimension;

import io.flix.flink.payload.PayloadStore;
import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.batch.OperationBatch;

import org.apache.flink.api.common.typeutils.base.IntSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Large batches of inline payloads, put into the engine's batch on several threads: the dimension ends as the same
 * updates applied one by one would leave it, and where one update must go in order (a payload kept alone in its
 * batch, a payload the store refuses) the batch goes in order, with the same result or error.
 */
class ParallelBatchFillTest {

    private static final int KEYS = 5_000;
    private static final int BATCH = 4 * ParallelBatchFill.PART_MIN + 123;

    private LocalDimension<Long> dimension;

    @AfterEach
    void close() {
        if (dimension != null) {
            dimension.close();
        }
    }

    private LocalDimension<Long> open() {
        final FlixIndex index = FlixIndex.open(FlixConfig.builder().backend(Backend.CPU).threads(2).build());
        dimension = new LocalDimension<>("'prices'", index, PayloadStore.of(LongSerializer.INSTANCE, 16), 16);
        return dimension;
    }

    private static byte[] longBytes(long value) {
        return ByteBuffer.allocate(8).putLong(value).array();
    }

    /** Random upserts and deletes of few keys (many repeats in a batch), applied to the oracle as they are added. */
    private static SerializedUpdates randomBatch(SplittableRandom random, TreeMap<Long, Long> oracle) {
        final SerializedUpdates updates = new SerializedUpdates(BATCH);
        for (int i = 0; i < BATCH; i++) {
            final long key = random.nextLong(KEYS) - KEYS / 2;
            if (random.nextInt(5) == 0) {
                updates.delete(key);
                oracle.remove(key);
            } else {
                final long payload = random.nextLong(Long.MIN_VALUE + 1, Long.MAX_VALUE);
                updates.upsert(key, longBytes(payload), 8);
                oracle.put(key, payload);
            }
        }
        return updates;
    }

    private static void assertHolds(TreeMap<Long, Long> oracle, LocalDimension<Long> d) throws Exception {
        final long[] keys = new long[KEYS + 2];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = i - KEYS / 2 - 1;
        }
        final List<Long> payloads = DimensionReads.payloads(d, keys);
        for (int i = 0; i < keys.length; i++) {
            assertEquals(oracle.get(keys[i]), payloads.get(i), "key " + keys[i]);
        }
        assertEquals(oracle.size(), d.size());
    }

    @Test
    void largeBatchesOfInlinePayloadsLeaveWhatTheirUpdatesInOrderWould() throws Exception {
        final LocalDimension<Long> d = open();
        final TreeMap<Long, Long> oracle = new TreeMap<>();
        final SplittableRandom random = new SplittableRandom(11);
        for (int round = 0; round < 3; round++) {
            d.apply(randomBatch(random, oracle));
            assertHolds(oracle, d);
        }
        assertEquals(3L * BATCH, d.appliedUpdates());
    }

    /** The payload with the bits of NOT_FOUND goes alone in its batch: the whole batch goes in order. */
    @Test
    void aPayloadKeptAloneInItsBatchSendsTheBatchInOrder() throws Exception {
        final LocalDimension<Long> d = open();
        final TreeMap<Long, Long> oracle = new TreeMap<>();
        final SplittableRandom random = new SplittableRandom(12);
        final SerializedUpdates updates = randomBatch(random, oracle);
        updates.upsert(KEYS, longBytes(Long.MIN_VALUE), 8);
        oracle.put((long) KEYS, Long.MIN_VALUE);
        final SerializedUpdates after = randomBatch(random, oracle);
        for (int i = 0; i < after.size(); i++) {
            if (after.isDelete(i)) {
                updates.delete(after.key(i));
            } else {
                updates.upsertView(after.key(i), after.bytes(i), after.offset(i), after.length(i));
            }
        }
        d.apply(updates);
        assertHolds(oracle, d);
        assertEquals(List.of(Long.MIN_VALUE), DimensionReads.payloads(d, KEYS));
        d.apply(randomBatch(random, oracle)); // with a key on the side: in order again
        assertHolds(oracle, d);
    }

    @Test
    void aPayloadOfTheWrongLengthFailsTheBatchNamingItsKey() throws Exception {
        final LocalDimension<Long> d = open();
        final TreeMap<Long, Long> oracle = new TreeMap<>();
        final SplittableRandom random = new SplittableRandom(13);
        d.apply(randomBatch(random, oracle));
        final SerializedUpdates updates = randomBatch(random, new TreeMap<>());
        updates.upsert(987_654_321L, new byte[] {1, 2, 3, 4}, 4);
        final IOException e = assertThrows(IOException.class, () -> d.apply(updates));
        assertTrue(e.getMessage().contains("987654321") && e.getMessage().contains("4 bytes"), e.getMessage());
        assertThrows(LocalDimension.FailedException.class, () -> assertHolds(oracle, d));
    }

    @Test
    void theFillDeclinesWhatMustGoInOrderAndLeavesTheBatchEmpty() throws Exception {
        final SplittableRandom random = new SplittableRandom(14);
        final SerializedUpdates large = randomBatch(random, new TreeMap<>());
        final OperationBatch batch = new OperationBatch();
        try (ParallelBatchFill fill = new ParallelBatchFill("test fill", 4)) {
            assertTrue(fill.fill(large, PayloadStore.of(LongSerializer.INSTANCE, 16), batch));
            assertEquals(BATCH, batch.size());
            int deletes = 0;
            for (int i = 0; i < BATCH; i++) {
                assertEquals(large.key(i), batch.key(i));
                if (large.isDelete(i)) {
                    deletes++;
                } else {
                    assertEquals(ByteBuffer.wrap(large.bytes(i), large.offset(i), 8).getLong(), batch.value(i));
                }
            }
            assertEquals(deletes, batch.count(OperationBatch.DELETE));
            batch.clear();

            final SerializedUpdates small = new SerializedUpdates(16);
            for (int i = 0; i < 2 * ParallelBatchFill.PART_MIN - 1; i++) {
                small.upsert(i, longBytes(i), 8);
            }
            assertFalse(fill.fill(small, PayloadStore.of(LongSerializer.INSTANCE, 16), batch), "too small");
            assertFalse(fill.fill(large, PayloadStore.of(StringSerializer.INSTANCE, 16), batch), "a row store");
            final SerializedUpdates ints = new SerializedUpdates(16);
            for (int i = 0; i < BATCH; i++) {
                ints.upsert(i, i == BATCH - 1 ? longBytes(i) : new byte[] {0, 0, 0, 1}, i == BATCH - 1 ? 8 : 4);
            }
            assertFalse(fill.fill(ints, PayloadStore.of(IntSerializer.INSTANCE, 16), batch), "a refused payload");
            assertEquals(0, batch.size());
            large.upsert(1, longBytes(Long.MIN_VALUE), 8);
            assertFalse(fill.fill(large, PayloadStore.of(LongSerializer.INSTANCE, 16), batch), "kept alone");
            assertEquals(0, batch.size());
        }
    }
}
