package io.flix.index.batch;

import io.flix.index.FlixIndex;

/**
 * An arrival-ordered buffer of index operations for {@link MicroBatchEngine}, held in primitive arrays (no object
 * per operation). Each add method returns the operation's position, which is how its result is found in
 * {@link BatchResults}. Arguments are checked when an operation is added, so a batch never holds an invalid one.
 * Reusable: {@link #clear()} keeps the arrays. Not thread-safe.
 */
public final class OperationBatch {

    /** Inserts or replaces a key's value. No result. */
    public static final byte UPSERT = 0;
    /** Removes a key if present. No result. */
    public static final byte DELETE = 1;
    /** The value of a key, {@link FlixIndex#NOT_FOUND} where absent. */
    public static final byte GET = 2;
    /** The smallest stored key {@code >=} the given key, and its value. */
    public static final byte CEILING = 3;
    /** The largest stored key {@code <=} the given key, and its value. */
    public static final byte FLOOR = 4;
    /** The stored pairs in {@code [lo, hi]}, in key order, at most {@code limit}. */
    public static final byte RANGE = 5;

    private static final int MAX_CAPACITY = Integer.MAX_VALUE - 8;
    private static final int INITIAL_CAPACITY = 16;
    /** The kind of a position added by {@link #extendUpdates} and not yet set. */
    private static final byte UNSET = -1;

    byte[] kinds;
    /** The key, or {@code lo} for a range. */
    long[] keys;
    /** The upsert value, or {@code hi} for a range; unused otherwise. */
    long[] values;
    /** The range limit; unused otherwise. */
    int[] limits;
    int size;
    /** Counts by kind, so the engine can size its work without a pass. */
    final int[] kindCounts = new int[RANGE + 1];

    public OperationBatch() {
        this(INITIAL_CAPACITY);
    }

    public OperationBatch(int initialCapacity) {
        if (initialCapacity < 0 || initialCapacity > MAX_CAPACITY) {
            throw new IllegalArgumentException(
                    "initialCapacity must be in [0, " + MAX_CAPACITY + "], was " + initialCapacity);
        }
        kinds = new byte[initialCapacity];
        keys = new long[initialCapacity];
        values = new long[initialCapacity];
        limits = new int[initialCapacity];
    }

    public int upsert(long key, long value) {
        checkValue(value);
        return add(UPSERT, key, value, 0);
    }

    public int delete(long key) {
        return add(DELETE, key, 0, 0);
    }

    public int get(long key) {
        return add(GET, key, 0, 0);
    }

    public int ceiling(long key) {
        return add(CEILING, key, 0, 0);
    }

    public int floor(long key) {
        return add(FLOOR, key, 0, 0);
    }

    /** The stored pairs with keys in {@code [lo, hi]} (inclusive), in key order, at most {@code limit}. */
    public int range(long lo, long hi, int limit) {
        if (lo > hi) {
            throw new IllegalArgumentException("lo " + lo + " is greater than hi " + hi);
        }
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be >= 1, was " + limit);
        }
        return add(RANGE, lo, hi, limit);
    }

    /**
     * Appends {@code n} updates to be written by position with {@link #setUpsert} and {@link #setDelete}, from several
     * threads at once where each writes positions of its own; then {@link #countKinds()} before the batch runs (or
     * {@link #takeKindCounts} of ranges each counted by its thread).
     *
     * @return the position of the first
     */
    public int extendUpdates(int n) {
        if (n < 0 || n > MAX_CAPACITY - size) {
            throw new IllegalArgumentException("cannot add " + n + " operations to a batch of " + size);
        }
        while (kinds.length - size < n) {
            grow();
        }
        final int first = size;
        java.util.Arrays.fill(kinds, first, first + n, UNSET);
        size = first + n;
        return first;
    }

    /** Makes position {@code i} of {@link #extendUpdates} an upsert of {@code key} to {@code value}. */
    public void setUpsert(int i, long key, long value) {
        checkValue(value);
        checkPosition(i);
        kinds[i] = UPSERT;
        keys[i] = key;
        values[i] = value;
    }

    /** Makes position {@code i} of {@link #extendUpdates} a delete of {@code key}. */
    public void setDelete(int i, long key) {
        checkPosition(i);
        kinds[i] = DELETE;
        keys[i] = key;
    }

    /**
     * Counts the operations by kind after positions were written by {@link #setUpsert} and {@link #setDelete}.
     *
     * @throws IllegalStateException where a position of {@link #extendUpdates} was not written
     */
    public void countKinds() {
        takeKindCounts(java.util.List.of(countKinds(0, size)));
    }

    /** The operations of positions {@code [from, to)} counted by kind, by {@link #countKinds(int, int)}. */
    public record KindCounts(int from, int to, int[] counts) {
    }

    /**
     * Counts the operations of positions {@code [from, to)} by kind, for {@link #takeKindCounts}: it only reads, so
     * several threads may count ranges at once (after the positions were set).
     *
     * @throws IllegalStateException where a position of {@link #extendUpdates} in the range was not written
     */
    public KindCounts countKinds(int from, int to) {
        if (from < 0 || from > to || to > size) {
            throw new IndexOutOfBoundsException("[" + from + ", " + to + ") is not a range of the batch of " + size);
        }
        final int[] counts = new int[RANGE + 1];
        int upserts = 0;
        int deletes = 0;
        for (int i = from; i < to; i++) {
            final byte kind = kinds[i];
            if (kind == UPSERT) {
                upserts++;
            } else if (kind == DELETE) {
                deletes++;
            } else if (kind == UNSET) {
                throw new IllegalStateException("operation " + i + " of " + size + " was added by extendUpdates "
                        + "but never set");
            } else {
                counts[kind]++;
            }
        }
        counts[UPSERT] = upserts;
        counts[DELETE] = deletes;
        return new KindCounts(from, to, counts);
    }

    /**
     * Takes the counts of ranges that cover every position once, in order, as {@link #countKinds()} would count them.
     *
     * @throws IllegalArgumentException where the ranges leave a position out or count one twice
     */
    public void takeKindCounts(java.util.List<KindCounts> parts) {
        final int[] total = new int[RANGE + 1];
        int next = 0;
        for (KindCounts part : parts) {
            if (part.from() != next) {
                throw new IllegalArgumentException("the counted ranges do not cover the batch of " + size
                        + " once: one starts at " + part.from() + ", where " + next + " was due");
            }
            next = part.to();
            for (int k = 0; k < total.length; k++) {
                total[k] += part.counts()[k];
            }
        }
        if (next != size) {
            throw new IllegalArgumentException("the counted ranges end at " + next + ", not at the batch's size "
                    + size);
        }
        System.arraycopy(total, 0, kindCounts, 0, total.length);
    }

    /** Number of operations added since the last {@link #clear()}. */
    public int size() {
        return size;
    }

    public boolean isEmpty() {
        return size == 0;
    }

    /** Forgets every operation; keeps the arrays for reuse. */
    public void clear() {
        size = 0;
        java.util.Arrays.fill(kindCounts, 0);
    }

    /** Number of operations of one kind in the batch. */
    public int count(byte kind) {
        checkKind(kind);
        return kindCounts[kind];
    }

    /** The kind of operation {@code i}: one of {@link #UPSERT} .. {@link #RANGE}. */
    public byte kind(int i) {
        checkPosition(i);
        return kinds[i];
    }

    /** The key of operation {@code i}, or {@code lo} for a range. */
    public long key(int i) {
        checkPosition(i);
        return keys[i];
    }

    /** The value of upsert {@code i}. */
    public long value(int i) {
        checkKindAt(i, UPSERT);
        return values[i];
    }

    /** The upper bound of range {@code i}. */
    public long hi(int i) {
        checkKindAt(i, RANGE);
        return values[i];
    }

    /** The limit of range {@code i}. */
    public int limit(int i) {
        checkKindAt(i, RANGE);
        return limits[i];
    }

    /** A name for an operation kind, for messages. */
    public static String kindName(byte kind) {
        return switch (kind) {
            case UPSERT -> "upsert";
            case DELETE -> "delete";
            case GET -> "get";
            case CEILING -> "ceiling";
            case FLOOR -> "floor";
            case RANGE -> "range";
            default -> "unknown kind " + kind;
        };
    }

    private int add(byte kind, long key, long value, int limit) {
        if (size == kinds.length) {
            grow();
        }
        final int at = size;
        kinds[at] = kind;
        keys[at] = key;
        values[at] = value;
        limits[at] = limit;
        kindCounts[kind]++;
        size = at + 1;
        return at;
    }

    private void grow() {
        if (size == MAX_CAPACITY) {
            throw new IllegalStateException("batch holds " + size + " operations, the most it can");
        }
        final int capacity = (int) Math.min(MAX_CAPACITY, Math.max(INITIAL_CAPACITY, 2L * kinds.length));
        kinds = java.util.Arrays.copyOf(kinds, capacity);
        keys = java.util.Arrays.copyOf(keys, capacity);
        values = java.util.Arrays.copyOf(values, capacity);
        limits = java.util.Arrays.copyOf(limits, capacity);
    }

    private void checkPosition(int i) {
        if (i < 0 || i >= size) {
            throw new IndexOutOfBoundsException("operation " + i + " is outside the batch of " + size);
        }
    }

    private void checkKindAt(int i, byte kind) {
        checkPosition(i);
        if (kinds[i] != kind) {
            throw new IllegalArgumentException(
                    "operation " + i + " is a " + kindName(kinds[i]) + ", not a " + kindName(kind));
        }
    }

    private static void checkValue(long value) {
        if (value == FlixIndex.NOT_FOUND) {
            throw new IllegalArgumentException("value is NOT_FOUND (Long.MIN_VALUE), which is reserved");
        }
    }

    private static void checkKind(byte kind) {
        if (kind < UPSERT || kind > RANGE) {
            throw new IllegalArgumentException("kind must be in [" + UPSERT + ", " + RANGE + "], was " + kind);
        }
    }
}
