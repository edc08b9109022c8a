package io.flix.index.cpu;

import static io.flix.index.FlixIndex.NOT_FOUND;


/**
 * Every stored key of the CPU index with its value, in an open-addressing hash table beside the ordered nodes: an
 * exact get reads about one cache line here, where the walk of buckets and nodes misses the cache two or three times
 * a key. Ordered lookups never read it.
 *
 * <p>Linear probing, a key and its value side by side; {@link io.flix.index.FlixIndex#NOT_FOUND}, never a stored
 * value, marks an empty slot, so keys take every {@code long}. A remove shifts the entries after it back, so no
 * tombstones build up. At most three quarters full: the table doubles before an insert would pass that. Slots live in
 * segments of 2^14 (256 KiB), like the node pool's keys, so it holds more keys than one Java array could. Writers run
 * alone (under the index's write lock); any number of readers may share it.
 */
final class ExactKeyTable {

    private static final int SEGMENT_SHIFT = 14;
    private static final int SEGMENT_SLOTS = 1 << SEGMENT_SHIFT;
    private static final long SEGMENT_MASK = SEGMENT_SLOTS - 1;
    private static final int MIN_BITS = 4;
    private static final int MAX_BITS = 40;
    /** Fibonacci hashing: the product's top bits spread sequential and strided keys over the slots. */
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;

    private long[][] segments;
    private int bits;
    private long mask;
    private long size;

    ExactKeyTable() {
        allocate(MIN_BITS);
    }

    long size() {
        return size;
    }

    /** Bytes of the slots (their capacity). */
    long bytes() {
        long bytes = 0;
        for (long[] segment : segments) {
            bytes += 8L * segment.length;
        }
        return bytes;
    }

    /** Empties the table, sized for {@code expected} keys. */
    void clear(long expected) {
        allocate(bitsFor(expected));
    }

    /** Grows now, if needed, so that {@code more} keys beyond those held go in without growing. */
    void reserve(long more) {
        final int needed = bitsFor(size + more);
        if (needed > bits) {
            rehash(needed);
        }
    }

    /** Shrinks to the fewest slots that hold the keys held, where that is fewer than now. */
    void fit() {
        final int needed = bitsFor(size);
        if (needed < bits) {
            rehash(needed);
        }
    }

    /** Slots in the table. */
    long capacity() {
        return mask + 1;
    }

    /** The value of {@code key}, or {@code NOT_FOUND}. */
    long get(long key) {
        long slot = homeSlot(key);
        while (true) {
            final long[] segment = segments[(int) (slot >>> SEGMENT_SHIFT)];
            final int at = (int) (slot & SEGMENT_MASK) << 1;
            final long value = segment[at + 1];
            if (value == NOT_FOUND || segment[at] == key) {
                return value;
            }
            slot = (slot + 1) & mask;
        }
    }

    /** Writes the value of each of {@code keys[from, to)} to {@code valuesOut} at the same index. */
    void get(long[] keys, int from, int to, long[] valuesOut) {
        for (int i = from; i < to; i++) {
            valuesOut[i] = get(keys[i]);
        }
    }

    /** Inserts {@code key} or replaces its value; {@code value} is not {@code NOT_FOUND}. */
    void put(long key, long value) {
        if (bitsFor(size + 1) > bits) {
            rehash(bits + 1);
        }
        long slot = homeSlot(key);
        while (true) {
            final long[] segment = segments[(int) (slot >>> SEGMENT_SHIFT)];
            final int at = (int) (slot & SEGMENT_MASK) << 1;
            if (segment[at + 1] == NOT_FOUND) {
                segment[at] = key;
                segment[at + 1] = value;
                size++;
                return;
            }
            if (segment[at] == key) {
                segment[at + 1] = value;
                return;
            }
            slot = (slot + 1) & mask;
        }
    }

    /** Removes {@code key} where present. */
    void remove(long key) {
        long hole = homeSlot(key);
        while (true) {
            final long value = valueAt(hole);
            if (value == NOT_FOUND) {
                return;
            }
            if (keyAt(hole) == key) {
                break;
            }
            hole = (hole + 1) & mask;
        }
        // Entries after the hole whose probe passed it move back into it, so every entry stays reachable.
        long next = hole;
        while (true) {
            next = (next + 1) & mask;
            final long value = valueAt(next);
            if (value == NOT_FOUND) {
                break;
            }
            final long k = keyAt(next);
            if (mayFill(homeSlot(k), hole, next)) {
                set(hole, k, value);
                hole = next;
            }
        }
        set(hole, 0L, NOT_FOUND);
        size--;
    }

    /** Whether an entry at {@code at} whose home is {@code home} can move back to {@code hole}, before it. */
    private static boolean mayFill(long home, long hole, long at) {
        // The entry may move unless its home lies cyclically in (hole, at].
        return hole <= at ? (home <= hole || home > at) : (home <= hole && home > at);
    }

    /** The slot where the probe for {@code key} starts. */
    long homeSlot(long key) {
        return (key * GOLDEN) >>> (64 - bits);
    }

    private long keyAt(long slot) {
        return segments[(int) (slot >>> SEGMENT_SHIFT)][(int) (slot & SEGMENT_MASK) << 1];
    }

    private long valueAt(long slot) {
        return segments[(int) (slot >>> SEGMENT_SHIFT)][((int) (slot & SEGMENT_MASK) << 1) + 1];
    }

    private void set(long slot, long key, long value) {
        final long[] segment = segments[(int) (slot >>> SEGMENT_SHIFT)];
        final int at = (int) (slot & SEGMENT_MASK) << 1;
        segment[at] = key;
        segment[at + 1] = value;
    }

    private void rehash(int newBits) {
        final long[][] old = segments;
        allocate(newBits);
        for (long[] segment : old) {
            for (int at = 0; at < segment.length; at += 2) {
                if (segment[at + 1] != NOT_FOUND) {
                    put(segment[at], segment[at + 1]);
                }
            }
        }
    }

    /** An empty table of {@code 2^newBits} slots. */
    private void allocate(int newBits) {
        final long slots = 1L << newBits;
        final int count = (int) Math.max(1, slots >>> SEGMENT_SHIFT);
        final int longsEach = (int) Math.min(slots, SEGMENT_SLOTS) << 1;
        final long[][] fresh = new long[count][];
        for (int i = 0; i < count; i++) {
            final long[] segment = new long[longsEach];
            for (int at = 1; at < longsEach; at += 2) {
                segment[at] = NOT_FOUND;
            }
            fresh[i] = segment;
        }
        segments = fresh;
        bits = newBits;
        mask = slots - 1;
        size = 0;
    }

    /** The fewest bits whose table holds {@code keys} at most three quarters full. */
    private static int bitsFor(long keys) {
        int b = MIN_BITS;
        while (b < MAX_BITS && (3L << b) / 4 < keys) {
            b++;
        }
        if ((3L << b) / 4 < keys) {
            throw new IllegalStateException("the exact-key table cannot hold " + keys + " keys");
        }
        return b;
    }
}
