package io.flix.flink.payload;

import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The row store's memory follows its live rows: measured by its own accounting ({@link RowStore#heapBytes()}),
 * which is checked against the arrays it really holds.
 */
class RowStoreMemoryTest {

    private static final int KEYS = 50_000;
    /** Rows added before the rows they replace are freed, as a micro-batch of updates does. */
    private static final int BATCH = 1000;

    @Test
    void payloadsDriftingInSizeLeaveNoDeadSlabsBehind() throws Exception {
        final RowStore store = new RowStore(0);
        final int[] rowOfKey = new int[KEYS];
        java.util.Arrays.fill(rowOfKey, -1);
        final DataOutputSerializer out = new DataOutputSerializer(2048);
        for (int size : new int[] {100, 300, 1000, 100}) {
            for (int from = 0; from < KEYS; from += BATCH) {
                final int[] superseded = new int[BATCH];
                for (int key = from; key < from + BATCH; key++) {
                    out.clear();
                    StringSerializer.INSTANCE.serialize(payload(key, size), out);
                    superseded[key - from] = rowOfKey[key];
                    rowOfKey[key] = store.add(out.getSharedBuffer(), 0, out.length());
                }
                for (int row : superseded) {
                    if (row >= 0) {
                        store.free(row);
                    }
                }
            }
            // what the class comment promises: slabs within twice the live bytes (plus the id table) and 2 MiB
            final long bound = 3 * store.liveBytes() + 4L * RowStore.SLAB_BYTES;
            assertTrue(store.heapBytes() <= bound, "payloads of " + size + " characters: " + store.heapBytes()
                    + " bytes held for " + store.liveBytes() + " live, at most " + bound + " expected");
            // every key still reads its payload through its (unchanged) row id
            final DataInputDeserializer in = new DataInputDeserializer();
            for (int key = 0; key < KEYS; key += 7) {
                store.readInto(rowOfKey[key], in);
                assertEquals(payload(key, size), StringSerializer.INSTANCE.deserialize(in));
            }
        }
        assertEquals(KEYS, store.liveRows());
        assertEquals(heldArrayBytes(store), store.heapBytes(), "the accounting covers every array held");

        for (int key = 0; key < KEYS; key++) {
            store.free(rowOfKey[key]);
        }
        assertEquals(0, store.liveRows());
        assertEquals(heldArrayBytes(store), store.heapBytes());
        assertEquals(new RowStore(0).heapBytes() + RowStore.SLAB_BYTES, store.heapBytes(),
                "no rows: nothing held but an empty store's arrays and one slab for the next rows");
    }

    @Test
    void rowsLargerThanASlabLetGoOfTheirSlabWhenFreed() throws Exception {
        final RowStore store = new RowStore(0);
        final int small = store.add(new byte[10], 0, 10);
        final int[] large = new int[5];
        for (int i = 0; i < large.length; i++) {
            large[i] = store.add(new byte[RowStore.SLAB_BYTES + 1], 0, RowStore.SLAB_BYTES + 1);
        }
        for (int row : large) {
            store.free(row);
        }
        assertTrue(store.heapBytes() < 2L * RowStore.SLAB_BYTES, "held " + store.heapBytes());
        assertEquals(heldArrayBytes(store), store.heapBytes());
        assertEquals(1, store.liveRows());
        store.free(small);
        assertEquals(new RowStore(0).heapBytes() + RowStore.SLAB_BYTES, store.heapBytes());
    }

    @Test
    void fixedLengthRowsGiveBackTheSlabsAboveTheHighestLiveRow() throws Exception {
        final int length = 16;
        final int rowsPerSlab = RowStore.SLAB_BYTES / length;
        final int rows = 16 * rowsPerSlab;
        final RowStore store = new RowStore(length);
        final byte[] bytes = new byte[length];
        for (int i = 0; i < rows; i++) {
            assertEquals(i, store.add(bytes, 0, length));
        }
        final long full = store.heapBytes();
        assertTrue(full >= 16L * RowStore.SLAB_BYTES);
        // keep every 4096th row, free the rest: the live rows are spread over all the slabs
        for (int row = 0; row < rows; row++) {
            if (row % 4096 != 0) {
                store.free(row);
            }
        }
        assertEquals(rows / 4096, store.liveRows());
        // update each live row (a new row first, then the old one freed): the new rows take the lowest free ids
        for (int row = 0; row < rows; row += 4096) {
            final int replacement = store.add(bytes, 0, length);
            assertTrue(replacement < rows / 4096 + 1, "lowest free id first, was " + replacement);
            store.free(row);
        }
        assertEquals(heldArrayBytes(store), store.heapBytes());
        // the live rows in the first slab, one slab in reserve, and per id of those two slabs a free-id bit and a
        // live bit (a byte per id allowed)
        final long bound = 2L * RowStore.SLAB_BYTES + 2L * rowsPerSlab;
        assertTrue(store.heapBytes() <= bound, "held " + store.heapBytes() + ", at most " + bound + " expected");
        for (int row = 0; row < rows / 4096; row++) {
            store.free(row);
        }
        assertEquals(new RowStore(length).heapBytes() + RowStore.SLAB_BYTES, store.heapBytes());
        assertEquals(RowStoreMemoryTest.heldArrayBytes(store), store.heapBytes());
    }

    private static String payload(int key, int size) {
        final StringBuilder s = new StringBuilder(size).append(key).append(':');
        while (s.length() < size) {
            s.append((char) ('a' + s.length() % 26));
        }
        return s.toString();
    }

    /**
     * Bytes of the arrays the store's fields hold (references as 8 bytes), found by reflection, through the
     * objects of this package it holds.
     */
    static long heldArrayBytes(Object store) throws IllegalAccessException {
        long bytes = 0;
        for (Field field : store.getClass().getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers())) {
                continue;
            }
            field.setAccessible(true);
            if (field.getType().isArray()) {
                bytes += arrayBytes(field.get(store));
            } else if (field.getType().getPackage() == RowStore.class.getPackage() && field.get(store) != null) {
                bytes += heldArrayBytes(field.get(store));
            }
        }
        return bytes;
    }

    private static long arrayBytes(Object array) {
        if (array == null) {
            return 0;
        }
        final Class<?> component = array.getClass().getComponentType();
        final int length = java.lang.reflect.Array.getLength(array);
        if (!component.isPrimitive()) {
            long bytes = 8L * length;
            for (int i = 0; i < length; i++) {
                bytes += arrayBytes(java.lang.reflect.Array.get(array, i));
            }
            return bytes;
        }
        final int size = component == long.class || component == double.class ? 8
                : component == int.class || component == float.class ? 4
                : component == short.class || component == char.class ? 2 : 1;
        return (long) size * length;
    }
}
