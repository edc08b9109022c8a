package io.flix.index.batch;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SplittableRandom;

import static io.flix.index.FlixIndex.NOT_FOUND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class OperationBatchTest {

    @Test
    void aReservedValueIsRejectedAndNotAdded() {
        final OperationBatch batch = new OperationBatch();
        batch.get(1);
        final IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> batch.upsert(1, NOT_FOUND));
        assertTrue(e.getMessage().contains("value"), e.getMessage());
        assertEquals(1, batch.size());
        assertEquals(0, batch.count(OperationBatch.UPSERT));
    }

    @Test
    void aRangeWithLoAboveHiIsRejected() {
        final OperationBatch batch = new OperationBatch();
        final IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> batch.range(5, 4, 1));
        assertTrue(e.getMessage().contains("lo") && e.getMessage().contains("hi"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> batch.range(Long.MAX_VALUE, Long.MIN_VALUE, 1));
        assertEquals(0, batch.size());
    }

    @Test
    void aRangeLimitBelowOneIsRejected() {
        final OperationBatch batch = new OperationBatch();
        for (int limit : new int[] {0, -1, Integer.MIN_VALUE}) {
            final IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> batch.range(1, 2, limit));
            assertTrue(e.getMessage().contains("limit"), e.getMessage());
        }
        assertEquals(0, batch.size());
        batch.range(3, 3, 1);
        assertEquals(1, batch.size());
    }

    @Test
    void aNegativeCapacityIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> new OperationBatch(-1));
    }

    @Test
    void theBatchGrowsFromZeroCapacityAndKeepsEveryOperation() {
        final OperationBatch batch = new OperationBatch(0);
        final SplittableRandom random = new SplittableRandom(3);
        final int n = 10_000;
        final byte[] kinds = new byte[n];
        final long[] keys = new long[n];
        final long[] seconds = new long[n];
        final int[] limits = new int[n];
        for (int i = 0; i < n; i++) {
            kinds[i] = (byte) random.nextInt(6);
            keys[i] = random.nextLong();
            seconds[i] = kinds[i] == OperationBatch.RANGE ? random.nextLong(keys[i], Long.MAX_VALUE)
                    : random.nextLong(Long.MIN_VALUE + 1, Long.MAX_VALUE);
            limits[i] = 1 + random.nextInt(100);
            final int at = switch (kinds[i]) {
                case OperationBatch.UPSERT -> batch.upsert(keys[i], seconds[i]);
                case OperationBatch.DELETE -> batch.delete(keys[i]);
                case OperationBatch.GET -> batch.get(keys[i]);
                case OperationBatch.CEILING -> batch.ceiling(keys[i]);
                case OperationBatch.FLOOR -> batch.floor(keys[i]);
                default -> batch.range(keys[i], seconds[i], limits[i]);
            };
            assertEquals(i, at);
        }
        assertEquals(n, batch.size());
        final int[] counts = new int[6];
        for (int i = 0; i < n; i++) {
            assertEquals(kinds[i], batch.kind(i));
            assertEquals(keys[i], batch.key(i));
            counts[kinds[i]]++;
            if (kinds[i] == OperationBatch.UPSERT) {
                assertEquals(seconds[i], batch.value(i));
            } else if (kinds[i] == OperationBatch.RANGE) {
                assertEquals(seconds[i], batch.hi(i));
                assertEquals(limits[i], batch.limit(i));
            }
        }
        for (byte kind = 0; kind < 6; kind++) {
            assertEquals(counts[kind], batch.count(kind));
        }
    }

    @Test
    void clearForgetsOperationsAndCounts() {
        final OperationBatch batch = new OperationBatch(1);
        batch.upsert(1, 2);
        batch.range(1, 2, 3);
        batch.clear();
        assertEquals(0, batch.size());
        assertTrue(batch.isEmpty());
        assertEquals(0, batch.count(OperationBatch.UPSERT));
        assertEquals(0, batch.count(OperationBatch.RANGE));
        assertThrows(IndexOutOfBoundsException.class, () -> batch.kind(0));
        assertEquals(0, batch.get(9));
        assertEquals(OperationBatch.GET, batch.kind(0));
    }

    @Test
    void accessorsOfTheWrongKindAreRejected() {
        final OperationBatch batch = new OperationBatch();
        final int get = batch.get(1);
        assertThrows(IllegalArgumentException.class, () -> batch.value(get));
        assertThrows(IllegalArgumentException.class, () -> batch.hi(get));
        assertThrows(IllegalArgumentException.class, () -> batch.limit(get));
        assertThrows(IndexOutOfBoundsException.class, () -> batch.key(1));
        assertThrows(IndexOutOfBoundsException.class, () -> batch.key(-1));
        assertThrows(IllegalArgumentException.class, () -> batch.count((byte) 6));
    }

    /** Updates written by position on several threads read back as the same updates added one by one. */
    @Test
    void updatesSetByPositionOnSeveralThreadsReadAsAddedInOrder() throws Exception {
        final int n = 10_000;
        final long[] keys = new long[n];
        final long[] values = new long[n];
        final SplittableRandom random = new SplittableRandom(3);
        for (int i = 0; i < n; i++) {
            keys[i] = random.nextLong(500);
            values[i] = random.nextInt(4) == 0 ? NOT_FOUND : random.nextLong(Long.MIN_VALUE + 1, Long.MAX_VALUE);
        }
        final OperationBatch inOrder = new OperationBatch();
        inOrder.get(-1);
        final OperationBatch byPosition = new OperationBatch(4);
        byPosition.get(-1);
        for (int i = 0; i < n; i++) {
            if (values[i] == NOT_FOUND) {
                inOrder.delete(keys[i]);
            } else {
                inOrder.upsert(keys[i], values[i]);
            }
        }
        final int first = byPosition.extendUpdates(n);
        assertEquals(1, first);
        final Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            final int part = t;
            threads[t] = new Thread(() -> {
                for (int i = part; i < n; i += threads.length) {
                    if (values[i] == NOT_FOUND) {
                        byPosition.setDelete(first + i, keys[i]);
                    } else {
                        byPosition.setUpsert(first + i, keys[i], values[i]);
                    }
                }
            });
            threads[t].start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        byPosition.countKinds();
        assertEquals(inOrder.size(), byPosition.size());
        for (byte kind = OperationBatch.UPSERT; kind <= OperationBatch.RANGE; kind++) {
            assertEquals(inOrder.count(kind), byPosition.count(kind), OperationBatch.kindName(kind));
        }
        for (int i = 0; i < inOrder.size(); i++) {
            assertEquals(inOrder.kind(i), byPosition.kind(i), "kind " + i);
            assertEquals(inOrder.key(i), byPosition.key(i), "key " + i);
            if (inOrder.kind(i) == OperationBatch.UPSERT) {
                assertEquals(inOrder.value(i), byPosition.value(i), "value " + i);
            }
        }
    }

    @Test
    void aPositionLeftUnsetFailsTheCountAndAReservedValueIsRefused() {
        final OperationBatch batch = new OperationBatch();
        batch.extendUpdates(3);
        batch.setUpsert(0, 1, 10);
        batch.setDelete(2, 3);
        final IllegalStateException unset = assertThrows(IllegalStateException.class, batch::countKinds);
        assertTrue(unset.getMessage().contains("operation 1 of 3"), unset.getMessage());
        assertThrows(IllegalArgumentException.class, () -> batch.setUpsert(1, 2, NOT_FOUND));
        assertThrows(IndexOutOfBoundsException.class, () -> batch.setDelete(3, 4));
        assertThrows(IllegalArgumentException.class, () -> batch.extendUpdates(-1));
        batch.setUpsert(1, 2, 20);
        batch.countKinds();
        assertEquals(2, batch.count(OperationBatch.UPSERT));
        assertEquals(1, batch.count(OperationBatch.DELETE));
    }

    @Test
    void rangesCountedOnThreadsOfTheirOwnGiveTheWholeBatchsCountsAndMustCoverItOnce() throws Exception {
        final int n = 10_000;
        final OperationBatch batch = new OperationBatch();
        batch.get(-1);
        batch.range(0, 5, 2);
        final int first = batch.extendUpdates(n);
        final int size = first + n;
        final int parts = 4;
        final OperationBatch.KindCounts[] counted = new OperationBatch.KindCounts[parts];
        final Thread[] threads = new Thread[parts];
        for (int t = 0; t < parts; t++) {
            final int from = t == 0 ? 0 : first + n * t / parts;
            final int to = first + n * (t + 1) / parts;
            final int part = t;
            threads[t] = new Thread(() -> {
                for (int i = Math.max(from, first); i < to; i++) {
                    if (i % 5 == 0) {
                        batch.setDelete(i, i);
                    } else {
                        batch.setUpsert(i, i, i * 2L);
                    }
                }
                counted[part] = batch.countKinds(from, to);
            });
            threads[t].start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        batch.takeKindCounts(List.of(counted));
        int deletes = 0;
        for (int i = first; i < size; i++) {
            deletes += i % 5 == 0 ? 1 : 0;
        }
        assertEquals(deletes, batch.count(OperationBatch.DELETE));
        assertEquals(n - deletes, batch.count(OperationBatch.UPSERT));
        assertEquals(1, batch.count(OperationBatch.GET));
        assertEquals(1, batch.count(OperationBatch.RANGE));

        final IllegalArgumentException gap = assertThrows(IllegalArgumentException.class,
                () -> batch.takeKindCounts(List.of(counted[0], counted[2], counted[3])));
        assertTrue(gap.getMessage().contains("once"), gap.getMessage());
        final IllegalArgumentException overlap = assertThrows(IllegalArgumentException.class,
                () -> batch.takeKindCounts(List.of(counted[0], counted[1], counted[1], counted[2],
                        counted[3])));
        assertTrue(overlap.getMessage().contains("once"), overlap.getMessage());
        final IllegalArgumentException shortOfTheEnd = assertThrows(IllegalArgumentException.class,
                () -> batch.takeKindCounts(List.of(counted[0], counted[1], counted[2])));
        assertTrue(shortOfTheEnd.getMessage().contains("not at the batch's size " + size),
                shortOfTheEnd.getMessage());
        assertEquals(deletes, batch.count(OperationBatch.DELETE), "a refused take leaves the counts");

        batch.extendUpdates(2);
        batch.setUpsert(size + 1, 7, 7);
        final IllegalStateException unset = assertThrows(IllegalStateException.class,
                () -> batch.countKinds(size - 3, size + 2));
        assertTrue(unset.getMessage().contains("operation " + size + " of " + (size + 2)), unset.getMessage());
        assertThrows(IndexOutOfBoundsException.class, () -> batch.countKinds(0, size + 3));
        assertThrows(IndexOutOfBoundsException.class, () -> batch.countKinds(5, 4));
    }
}
