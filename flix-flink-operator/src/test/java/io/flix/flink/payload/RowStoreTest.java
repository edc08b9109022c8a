package io.flix.flink.payload;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RowStoreTest {

    @Test
    void rowsReadBackWhatWasWrittenThroughRandomAddsAndFrees() {
        final RowStore store = new RowStore();
        final Map<Integer, byte[]> live = new HashMap<>();
        final SplittableRandom random = new SplittableRandom(42);
        long expectedBytes = 0;
        for (int step = 0; step < 50_000; step++) {
            if (live.isEmpty() || random.nextInt(3) > 0) {
                final int length = random.nextInt(10) == 0 ? random.nextInt(5000) : random.nextInt(40);
                final byte[] bytes = new byte[length];
                random.nextBytes(bytes);
                final int row = store.add(bytes, 0, length);
                assertTrue(live.put(row, bytes) == null, "a live row id is never handed out twice");
                expectedBytes += length;
            } else {
                final int row = live.keySet().iterator().next();
                expectedBytes -= live.remove(row).length;
                store.free(row);
            }
        }
        assertEquals(live.size(), store.liveRows());
        assertEquals(expectedBytes, store.liveBytes());
        for (Map.Entry<Integer, byte[]> e : live.entrySet()) {
            assertArrayEquals(e.getValue(), store.copy(e.getKey()));
        }
    }

    @Test
    void rowsReadBackThroughCompactionsAndLetGoSlabs() throws Exception {
        for (int fixedLength : new int[] {0, 24}) {
            final RowStore store = new RowStore(fixedLength);
            final Map<Integer, byte[]> live = new HashMap<>();
            final java.util.List<Integer> ids = new java.util.ArrayList<>();
            final SplittableRandom random = new SplittableRandom(7 + fixedLength);
            // the live set swells to a target and shrinks to another, over and over: compactions, released slabs
            for (int phase = 0; phase < 12; phase++) {
                final int target = phase % 2 == 0 ? 5_000 + random.nextInt(40_000) : random.nextInt(500);
                while (live.size() != target) {
                    if (live.size() < target) {
                        final int length = fixedLength > 0 ? fixedLength : random.nextInt(3000) == 0
                                ? RowStore.SLAB_BYTES + random.nextInt(100) : random.nextInt(4) == 0
                                ? random.nextInt(2000) : random.nextInt(60);
                        final byte[] bytes = new byte[length];
                        random.nextBytes(bytes);
                        final int row = store.add(bytes, 0, length);
                        assertTrue(live.put(row, bytes) == null, "a live row id is never handed out twice");
                        ids.add(row);
                    } else {
                        final int at = random.nextInt(ids.size());
                        final int row = ids.get(at);
                        ids.set(at, ids.get(ids.size() - 1));
                        ids.remove(ids.size() - 1);
                        live.remove(row);
                        store.free(row);
                    }
                }
                assertEquals(live.size(), store.liveRows());
                for (Map.Entry<Integer, byte[]> e : live.entrySet()) {
                    assertArrayEquals(e.getValue(), store.copy(e.getKey()), "row " + e.getKey() + ", phase " + phase);
                }
                assertEquals(RowStoreMemoryTest.heldArrayBytes(store), store.heapBytes(), "phase " + phase);
            }
            if (fixedLength == 0) {
                assertTrue(store.compactions() >= 3, "compactions: " + store.compactions());
            }
        }
    }

    @Test
    void freedRowsAndSpaceAreReused() {
        final RowStore store = new RowStore();
        final byte[] payload = new byte[100];
        for (int i = 0; i < 10_000; i++) {
            store.add(payload, 0, payload.length);
        }
        // replace every row many times over: after the first round (which makes the free lists), the store must
        // not grow
        long heap = -1;
        for (int round = 0; round < 20; round++) {
            if (round == 1) {
                heap = store.heapBytes();
            }
            for (int row = 0; row < 10_000; row++) {
                store.free(row);
                assertEquals(row, store.add(payload, 0, payload.length));
            }
        }
        assertEquals(heap, store.heapBytes());
        assertEquals(10_000, store.liveRows());
    }

    @Test
    void rowsLargerThanASlabGetTheirOwn() {
        final RowStore store = new RowStore();
        final byte[] small = {1, 2, 3};
        final byte[] large = new byte[RowStore.SLAB_BYTES * 2 + 5];
        new SplittableRandom(1).nextBytes(large);
        final int a = store.add(small, 0, 3);
        final int b = store.add(large, 0, large.length);
        final int c = store.add(small, 1, 2);
        assertArrayEquals(small, store.copy(a));
        assertArrayEquals(large, store.copy(b));
        assertArrayEquals(new byte[] {2, 3}, store.copy(c));
    }

    @Test
    void fixedLengthRowsReadBackWhatWasWrittenAndAreReused() {
        for (int length : new int[] {1, 8, 24, 1000, RowStore.SLAB_BYTES + 3}) {
            final RowStore store = new RowStore(length);
            final Map<Integer, byte[]> live = new HashMap<>();
            final SplittableRandom random = new SplittableRandom(length);
            final int steps = length > 10_000 ? 40 : 20_000;
            for (int step = 0; step < steps; step++) {
                if (live.isEmpty() || random.nextInt(3) > 0) {
                    final byte[] bytes = new byte[length];
                    random.nextBytes(bytes);
                    final int row = store.add(bytes, 0, length);
                    assertTrue(live.put(row, bytes) == null, "a live row id is never handed out twice");
                } else {
                    final int row = live.keySet().iterator().next();
                    live.remove(row);
                    store.free(row);
                    assertThrows(IllegalArgumentException.class, () -> store.free(row));
                }
            }
            assertEquals(live.size(), store.liveRows());
            assertEquals((long) live.size() * length, store.liveBytes());
            for (Map.Entry<Integer, byte[]> e : live.entrySet()) {
                assertArrayEquals(e.getValue(), store.copy(e.getKey()), "length " + length);
            }
            final long heap = store.heapBytes();
            for (int row : live.keySet().toArray(new Integer[0])) {
                store.free(row);
                store.add(new byte[length], 0, length);
            }
            assertEquals(heap, store.heapBytes(), "replacing rows reuses their space");
        }
    }

    @Test
    void fixedLengthRowsRejectOtherLengths() {
        final RowStore store = new RowStore(8);
        assertThrows(IllegalArgumentException.class, () -> store.add(new byte[9], 0, 9));
        assertThrows(IllegalArgumentException.class, () -> store.add(new byte[7], 0, 7));
        assertEquals(0, store.liveRows());
    }

    @Test
    void freeingADeadRowFails() {
        final RowStore store = new RowStore();
        final int row = store.add(new byte[4], 0, 4);
        store.free(row);
        assertThrows(IllegalArgumentException.class, () -> store.free(row));
        assertThrows(IllegalArgumentException.class, () -> store.free(12345));
    }

    @Test
    void sizeClassesCoverEveryLength() {
        for (int length = 0; length < 70_000; length++) {
            final int c = RowStore.sizeClass(length);
            assertTrue(RowStore.capacity(c) >= length, "capacity of length " + length);
            assertTrue(c == 0 || RowStore.capacity(c - 1) < length, "smallest class for length " + length);
        }
        assertTrue(RowStore.capacity(RowStore.sizeClass(RowStore.MAX_ROW_BYTES)) >= RowStore.MAX_ROW_BYTES);
    }
}
