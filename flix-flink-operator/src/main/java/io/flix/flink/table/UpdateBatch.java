package io.flix.flink.table;

import java.util.Arrays;

/**
 * Changelog records in arrival order, as the changelog reader hands them to a dimension's owner thread: per record
 * the key and either a delete or the serialized row. Filled by one thread, then handed over and only read.
 */
final class UpdateBatch {

    private long[] keys = new long[256];
    /** Per record: start of its row bytes in {@link #bytes}, or -1 for a delete. */
    private int[] rowStarts = new int[256];
    private int[] rowLengths = new int[256];
    private byte[] bytes = new byte[1 << 14];
    private int size;
    private int byteCount;

    void upsert(long key, byte[] row, int length) {
        grow();
        if (byteCount + length > bytes.length) {
            bytes = Arrays.copyOf(bytes, Math.max(byteCount + length, bytes.length * 2));
        }
        System.arraycopy(row, 0, bytes, byteCount, length);
        keys[size] = key;
        rowStarts[size] = byteCount;
        rowLengths[size] = length;
        byteCount += length;
        size++;
    }

    void delete(long key) {
        grow();
        keys[size] = key;
        rowStarts[size] = -1;
        rowLengths[size] = 0;
        size++;
    }

    private void grow() {
        if (size == keys.length) {
            keys = Arrays.copyOf(keys, size * 2);
            rowStarts = Arrays.copyOf(rowStarts, size * 2);
            rowLengths = Arrays.copyOf(rowLengths, size * 2);
        }
    }

    int size() {
        return size;
    }

    long key(int i) {
        return keys[i];
    }

    boolean isDelete(int i) {
        return rowStarts[i] < 0;
    }

    byte[] bytes() {
        return bytes;
    }

    /** Start of an upsert's row bytes in {@link #bytes()}. */
    int rowStart(int i) {
        return rowStarts[i];
    }

    int rowLength(int i) {
        return rowLengths[i];
    }
}
