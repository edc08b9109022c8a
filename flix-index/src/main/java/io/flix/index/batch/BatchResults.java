package io.flix.index.batch;

import io.flix.index.FlixIndex;

/**
 * The results of one {@link MicroBatchEngine#execute(OperationBatch)}, by operation position. The engine reuses
 * this object: it is valid until the next {@code execute} on the same engine; copy what must outlive that.
 *
 * <ul>
 *   <li>get: {@link #value(int)} is the value, or {@link FlixIndex#NOT_FOUND} where absent.</li>
 *   <li>ceiling, floor: {@link #key(int)} and {@link #value(int)} are the found pair; where none,
 *       the key is 0 and the value {@code NOT_FOUND} (as {@link FlixIndex#ceiling} writes them).</li>
 *   <li>range: the pairs are {@link #rangeKey(int)}/{@link #rangeValue(int)} for
 *       {@code j} in {@code [rangeStart(i), rangeStart(i) + rangeCount(i))}, in key order.</li>
 *   <li>upsert, delete: no result; asking for one is an {@link IllegalArgumentException}.</li>
 * </ul>
 */
public final class BatchResults {

    private byte[] kinds = new byte[0];
    private long[] keys = new long[0];
    private long[] values = new long[0];
    /** For range ops: the first pair's index in {@link #rangeKeys}; the count is in {@link #rangeCounts}. */
    private int[] rangeStarts = new int[0];
    private int[] rangeCounts = new int[0];
    private long[] rangeKeys = new long[0];
    private long[] rangeValues = new long[0];
    private int size;
    private int rangePairs;

    BatchResults() {
    }

    /** Number of operations the results cover: the size of the executed batch. */
    public int size() {
        return size;
    }

    /** The kind of operation {@code i}, as in {@link OperationBatch}. */
    public byte kind(int i) {
        checkPosition(i);
        return kinds[i];
    }

    /** get: the value or {@code NOT_FOUND}; ceiling/floor: the found key's value or {@code NOT_FOUND}. */
    public long value(int i) {
        checkPosition(i);
        final byte kind = kinds[i];
        if (kind != OperationBatch.GET && kind != OperationBatch.CEILING && kind != OperationBatch.FLOOR) {
            throw wrongKind(i, "a value");
        }
        return values[i];
    }

    /** Whether get, ceiling or floor {@code i} found something. */
    public boolean found(int i) {
        return value(i) != FlixIndex.NOT_FOUND;
    }

    /** ceiling/floor: the found key, 0 where none. */
    public long key(int i) {
        checkPosition(i);
        final byte kind = kinds[i];
        if (kind != OperationBatch.CEILING && kind != OperationBatch.FLOOR) {
            throw wrongKind(i, "a key");
        }
        return keys[i];
    }

    /** range: index of its first pair for {@link #rangeKey(int)} and {@link #rangeValue(int)}. */
    public int rangeStart(int i) {
        checkRange(i);
        return rangeStarts[i];
    }

    /** range: number of pairs found, at most its limit. */
    public int rangeCount(int i) {
        checkRange(i);
        return rangeCounts[i];
    }

    public long rangeKey(int j) {
        checkPair(j);
        return rangeKeys[j];
    }

    public long rangeValue(int j) {
        checkPair(j);
        return rangeValues[j];
    }

    /** Total number of range pairs over all range operations. */
    public int rangePairs() {
        return rangePairs;
    }

    // ---- filled by the engine ----

    void reset(OperationBatch batch) {
        final int n = batch.size;
        if (kinds.length < n) {
            final int capacity = Math.max(n, (int) Math.min(Integer.MAX_VALUE - 8, 2L * kinds.length));
            kinds = new byte[capacity];
            keys = new long[capacity];
            values = new long[capacity];
            rangeStarts = new int[capacity];
            rangeCounts = new int[capacity];
        }
        System.arraycopy(batch.kinds, 0, kinds, 0, n);
        size = n;
        rangePairs = 0;
    }

    void setValue(int i, long value) {
        values[i] = value;
    }

    /** The values by batch position, for an index call that writes the lookups' answers in place. */
    long[] valuesByPosition() {
        return values;
    }

    /** The keys by batch position, for an index call that writes the ceilings' or floors' answers in place. */
    long[] keysByPosition() {
        return keys;
    }

    void setPair(int i, long key, long value) {
        keys[i] = key;
        values[i] = value;
    }

    /** Starts range op {@code i}'s pairs at the current end. */
    void beginRange(int i) {
        rangeStarts[i] = rangePairs;
        rangeCounts[i] = 0;
    }

    void appendRangePair(int i, long key, long value) {
        if (rangePairs == rangeKeys.length) {
            final int capacity = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(64, 2L * rangeKeys.length));
            if (capacity == rangePairs) {
                throw new IllegalStateException("range results exceed " + capacity + " pairs");
            }
            rangeKeys = java.util.Arrays.copyOf(rangeKeys, capacity);
            rangeValues = java.util.Arrays.copyOf(rangeValues, capacity);
        }
        rangeKeys[rangePairs] = key;
        rangeValues[rangePairs] = value;
        rangePairs++;
        rangeCounts[i]++;
    }

    private void checkPosition(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("operation " + i + " is outside the results of " + size);
        }
    }

    private void checkRange(int i) {
        checkPosition(i);
        if (kinds[i] != OperationBatch.RANGE) {
            throw wrongKind(i, "range pairs");
        }
    }

    private void checkPair(int j) {
        if (j < 0 || j >= rangePairs) {
            throw new IndexOutOfBoundsException("range pair " + j + " is outside the " + rangePairs + " pairs");
        }
    }

    private IllegalArgumentException wrongKind(int i, String what) {
        return new IllegalArgumentException(
                "operation " + i + " is a " + OperationBatch.kindName(kinds[i]) + ", which has no " + what);
    }
}
