package io.flix.flink.table;

import io.flix.flink.dimension.LocalDimension;

import java.util.Arrays;

/**
 * Changelog records in arrival order, as the changelog reader applies them to its dimension: per record the key and
 * either a delete or the row as Flink's {@code RowDataSerializer} wrote it. Filled, then applied, by the reader's
 * thread.
 */
final class UpdateBatch implements LocalDimension.Updates {

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

    /** Empties the batch, keeping its arrays, once it is applied. */
    void clear() {
        size = 0;
        byteCount = 0;
    }

    private void grow() {
        if (size == keys.length) {
            keys = Arrays.copyOf(keys, size * 2);
            rowStarts = Arrays.copyOf(rowStarts, size * 2);
            rowLengths = Arrays.copyOf(rowLengths, size * 2);
        }
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public long key(int i) {
        return keys[i];
    }

    @Override
    public boolean isDelete(int i) {
        return rowStarts[i] < 0;
    }

    @Override
    public byte[] bytes(int i) {
        return bytes;
    }

    /** Start of an upsert's row bytes in {@link #bytes}. */
    @Override
    public int offset(int i) {
        return rowStarts[i];
    }

    @Override
    public int length(int i) {
        return rowLengths[i];
    }
}
