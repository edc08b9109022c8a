package io.flix.flink.payload;

import java.util.Arrays;

/**
 * A set of non-negative {@code int} ids that hands out its lowest first: a 64-ary tree of bit words, level 0 a bit
 * per id, each level above a bit per non-empty word of the level below, the top one word. Adding, removing and
 * taking the lowest are a few word operations each (one per level: 4 levels up to 2^24 ids); it holds about one
 * bit per id below its capacity. Not thread-safe.
 */
final class FreeIdSet {

    private static final int INITIAL_CAPACITY = 1024;

    /** levels[0]: a bit per id; levels[k]: a bit per non-zero word of levels[k - 1]; the last holds one word. */
    private long[][] levels;
    /** Ids below this fit in the levels. */
    private int capacity;
    private int size;

    FreeIdSet() {
        resize(INITIAL_CAPACITY);
    }

    int size() {
        return size;
    }

    /** Adds an id that is not in the set. */
    void add(int id) {
        if (id < 0) {
            throw new IllegalArgumentException("ids are non-negative, was " + id);
        }
        ensureCapacity(id + 1);
        if ((levels[0][id >>> 6] & (1L << id)) != 0) {
            throw new IllegalStateException("id " + id + " is in the set already");
        }
        int index = id;
        for (long[] level : levels) {
            final int word = index >>> 6;
            final long before = level[word];
            level[word] = before | (1L << index);
            if (before != 0) {
                break;
            }
            index = word;
        }
        size++;
    }

    /** Makes room for the ids below {@code ids}, growing by doubling. */
    void ensureCapacity(int ids) {
        if (ids > capacity) {
            resize((int) Math.min(Integer.MAX_VALUE, Math.max(ids, 2L * capacity)));
        }
    }

    /** The lowest id, or -1 where the set is empty. */
    int lowest() {
        if (size == 0) {
            return -1;
        }
        int word = 0;
        for (int l = levels.length - 1; l > 0; l--) {
            word = (word << 6) + Long.numberOfTrailingZeros(levels[l][word]);
        }
        return (word << 6) + Long.numberOfTrailingZeros(levels[0][word]);
    }

    /** Removes and returns the lowest id, or -1 where the set is empty. */
    int pollLowest() {
        final int id = lowest();
        if (id >= 0) {
            remove(id);
        }
        return id;
    }

    private void remove(int id) {
        int index = id;
        for (long[] level : levels) {
            final int word = index >>> 6;
            final long after = level[word] & ~(1L << index);
            level[word] = after;
            if (after != 0) {
                break;
            }
            index = word;
        }
        size--;
    }

    /** Removes every id at or above {@code top}, and shrinks to fit the ids below it. */
    void removeFrom(int top) {
        if (top >= capacity) {
            return;
        }
        final long[] bits = levels[0];
        final int words = (top + 63) >>> 6;
        if ((top & 63) != 0) {
            bits[words - 1] &= (1L << top) - 1;
        }
        for (int w = words; w < bits.length; w++) {
            bits[w] = 0;
        }
        size = 0;
        for (int w = 0; w < words; w++) {
            size += Long.bitCount(bits[w]);
        }
        resize(Math.max(INITIAL_CAPACITY, top));
    }

    /** Bytes of the arrays held, references counted as 8 bytes. */
    long heapBytes() {
        long bytes = 8L * levels.length;
        for (long[] level : levels) {
            bytes += 8L * level.length;
        }
        return bytes;
    }

    /** Sizes the levels for ids below {@code newCapacity}, keeping the ids below it, and rebuilds the upper ones. */
    private void resize(int newCapacity) {
        final long[] bits = Arrays.copyOf(levels == null ? new long[0] : levels[0], (newCapacity + 63) >>> 6);
        int count = 1;
        for (int words = bits.length; words > 1; words = (words + 63) >>> 6) {
            count++;
        }
        final long[][] built = new long[count][];
        built[0] = bits;
        for (int l = 1; l < count; l++) {
            final long[] below = built[l - 1];
            final long[] level = new long[(below.length + 63) >>> 6];
            for (int w = 0; w < below.length; w++) {
                if (below[w] != 0) {
                    level[w >>> 6] |= 1L << w;
                }
            }
            built[l] = level;
        }
        levels = built;
        capacity = newCapacity;
    }
}
