package io.flix.flink.dimension;

import java.util.Arrays;

/**
 * Updates in arrival order, as a {@link LocalDimension} applies them: per update its key and either a delete or the
 * payload as the payload serializer wrote it. An upsert's bytes are either copied in ({@link #upsert}: for a caller
 * that reuses its buffer) or referenced where they are ({@link #upsertView}: for bytes that stay put until the
 * updates are applied). Filled, applied, then {@link #clear}ed for reuse, by one thread at a time.
 */
public final class SerializedUpdates implements LocalDimension.Updates {

    private static final int DELETE = -1;

    private long[] keys;
    /**
     * Per update, which of {@link #arrays} holds its bytes (-1: none, a delete): an int, not a reference a store would
     * mark for the garbage collector.
     */
    private int[] arrayOf;
    /** The arrays the updates' bytes are in, each once for a run of updates on it (a block's, or an owned buffer). */
    private byte[][] arrays = new byte[16][];
    private int arrayCount;
    private int[] offsets;
    private int[] lengths;
    private int size;
    private long payloadBytes;
    /** Where {@link #upsert} copies bytes to; a grown buffer leaves the earlier updates on the old one. */
    private byte[] owned = new byte[1 << 14];
    private int ownedUsed;

    public SerializedUpdates(int capacity) {
        final int c = Math.max(1, capacity);
        keys = new long[c];
        arrayOf = new int[c];
        offsets = new int[c];
        lengths = new int[c];
    }

    /** An upsert of {@code key} to the first {@code length} bytes of {@code payload}, copied. */
    public void upsert(long key, byte[] payload, int length) {
        if (ownedUsed + length > owned.length) {
            owned = new byte[Math.max(length, owned.length * 2)];
            ownedUsed = 0;
        }
        System.arraycopy(payload, 0, owned, ownedUsed, length);
        add(key, owned, ownedUsed, length);
        ownedUsed += length;
    }

    /** An upsert of {@code key} to {@code length} bytes of {@code array} from {@code offset}, not copied. */
    public void upsertView(long key, byte[] array, int offset, int length) {
        add(key, array, offset, length);
    }

    public void delete(long key) {
        add(key, null, 0, DELETE);
    }

    private void add(long key, byte[] array, int offset, int length) {
        if (size == keys.length) {
            final int grown = size * 2;
            keys = Arrays.copyOf(keys, grown);
            arrayOf = Arrays.copyOf(arrayOf, grown);
            offsets = Arrays.copyOf(offsets, grown);
            lengths = Arrays.copyOf(lengths, grown);
        }
        keys[size] = key;
        if (array == null) {
            arrayOf[size] = -1;
        } else {
            if (arrayCount == 0 || arrays[arrayCount - 1] != array) {
                if (arrayCount == arrays.length) {
                    arrays = Arrays.copyOf(arrays, arrayCount * 2);
                }
                arrays[arrayCount++] = array;
            }
            arrayOf[size] = arrayCount - 1;
        }
        offsets[size] = offset;
        lengths[size] = length;
        size++;
        if (length > 0) {
            payloadBytes += length;
        }
    }

    /** Forgets the updates (and lets go of the arrays they referenced), keeping the capacity. */
    public void clear() {
        Arrays.fill(arrays, 0, arrayCount, null);
        arrayCount = 0;
        size = 0;
        ownedUsed = 0;
        payloadBytes = 0;
    }

    /** Bytes of the upserts' payloads held. */
    public long payloadBytes() {
        return payloadBytes;
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
        return lengths[i] == DELETE;
    }

    @Override
    public byte[] bytes(int i) {
        final int array = arrayOf[i];
        return array < 0 ? null : arrays[array];
    }

    @Override
    public int offset(int i) {
        return offsets[i];
    }

    @Override
    public int length(int i) {
        return lengths[i];
    }
}
