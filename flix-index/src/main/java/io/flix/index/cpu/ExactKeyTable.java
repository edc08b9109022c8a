package io.flix.index.cpu;

import static io.flix.index.FlixIndex.NOT_FOUND;

import java.util.Arrays;
import java.util.function.IntConsumer;
import java.util.function.LongConsumer;


/**
 * Every stored key of the CPU index with its value, in an open-addressing hash table beside the ordered nodes: an
 * exact get reads about one cache line here, where the walk of buckets and nodes misses the cache two or three times
 * a key. Ordered lookups never read it.
 *
 * <p>Linear probing, a key and its value side by side. A value is kept with its sign bit flipped, so that the zero of
 * a new array, the flipped {@link io.flix.index.FlixIndex#NOT_FOUND} (never a stored value), marks an empty slot
 * and keys take every {@code long}. A remove shifts the entries after it back, so no
 * tombstones build up. At most three quarters full: the table doubles before an insert would pass that. Slots live in
 * segments of 2^14 (256 KiB), like the node pool's keys, so it holds more keys than one Java array could. Writers run
 * alone (under the index's write lock); any number of readers may share it.
 *
 * <p>A batch of inserts and a growth run on several threads without locks: the slots are cut into one contiguous
 * range per thread, each thread writes only the keys whose home slot lies in its range, and a key whose probe would
 * leave the range waits for a serial pass at the end. Doubling keeps an entry's home in the range of the same number,
 * so a growth cuts the old and the new table alike.
 */
final class ExactKeyTable {

    private static final int SEGMENT_SHIFT = 14;
    private static final int SEGMENT_SLOTS = 1 << SEGMENT_SHIFT;
    private static final long SEGMENT_MASK = SEGMENT_SLOTS - 1;
    private static final int MIN_BITS = 4;
    private static final int MAX_BITS = 40;
    /** Fibonacci hashing: the product's top bits spread sequential and strided keys over the slots. */
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    /** The value word of an empty slot: {@code NOT_FOUND} as kept (see {@link #kept}). */
    private static final long EMPTY = 0L;
    /** Below this many slots the table is written on the caller's thread. */
    private static final int PARALLEL_MIN = 1 << 16;
    /** Keys of a batch looked up to judge how many of them are new ({@link #reserveFor}). */
    private static final int FRESH_SAMPLE = 1024;
    /**
     * New keys the sample may count above their true share: four standard deviations of a count of 1024 draws
     * ({@code sqrt(1024 / 4) = 16}), so that a batch of mostly known keys is almost never taken for new ones.
     */
    private static final int FRESH_SAMPLE_MARGIN = 64;
    /** The sample's positions follow from this seed: the same batch grows the table alike every time. */
    private static final long FRESH_SAMPLE_SEED = 0x5DEECE66DL;

    /** Runs {@code body} for parts {@code 0..parts-1}, possibly at once. */
    @FunctionalInterface
    interface Parts {
        void run(int parts, IntConsumer body);
    }

    private long[][] segments;
    private int bits;
    private long mask;
    /** The most keys the table holds before it grows: three quarters of its slots. */
    private long limit;
    private long size;
    /** Below this many keys a batch is written on the caller's thread. */
    private final int batchParallelMin;

    ExactKeyTable() {
        this(PARALLEL_MIN);
    }

    /** @param batchParallelMin fewest keys of a batch written (or counted) on several threads */
    ExactKeyTable(int batchParallelMin) {
        this.batchParallelMin = Math.max(1, batchParallelMin);
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

    /** Empties the table, sized for {@code expected} keys, its slots allocated on up to {@code parts} threads. */
    void clear(long expected, int parts, Parts runner) {
        allocate(bitsFor(expected), parts, runner);
    }

    /** Grows now, if needed, so that {@code more} keys beyond those held go in without growing. */
    void reserve(long more, int parts, Parts runner) {
        final int needed = bitsFor(size + more);
        if (needed > bits) {
            grow(needed, parts, runner);
        }
    }

    /**
     * Grows now, if needed, so that the unique {@code keys[0, n)} go in without growing, and no more than their new
     * keys need, so that a batch of mostly known keys does not double the table. Where they might not fit, a sample
     * of the keys is looked up first: where even its lowest plausible share of new keys needs the same growth as all
     * {@code n}, the table grows without a look at every key (a load's batches, all new); otherwise the keys not held
     * yet are counted (on up to {@code parts} threads).
     */
    void reserveFor(long[] keys, int n, int parts, Parts runner) {
        if (size + n <= limit) {
            return;
        }
        final int sampled = Math.min(n, FRESH_SAMPLE);
        int freshSampled = 0;
        long position = FRESH_SAMPLE_SEED;
        for (int j = 0; j < sampled; j++) {
            // one key at random from each of `sampled` equal strides: every key as likely as the others
            final long strideFrom = (long) n * j / sampled;
            final long stride = (long) n * (j + 1) / sampled - strideFrom;
            position = position * 6364136223846793005L + 1442695040888963407L;
            final int at = (int) (strideFrom + ((position >>> 33) % stride));
            if (get(keys[at]) == NOT_FOUND) {
                freshSampled++;
            }
        }
        if (sampled == n) {
            reserve(freshSampled, parts, runner);
            return;
        }
        final long freshAtLeast = (long) n * Math.max(0, freshSampled - FRESH_SAMPLE_MARGIN) / sampled;
        if (bitsFor(size + freshAtLeast) == bitsFor(size + n)) {
            reserve(n, parts, runner);
            return;
        }
        final int counted = parts <= 1 || n < batchParallelMin ? 1 : parts;
        final long[] fresh = new long[counted];
        runner.run(counted, p -> {
            long count = 0;
            for (int i = (int) ((long) n * p / counted); i < (long) n * (p + 1) / counted; i++) {
                if (get(keys[i]) == NOT_FOUND) {
                    count++;
                }
            }
            fresh[p] = count;
        });
        reserve(Arrays.stream(fresh).sum(), parts, runner);
    }

    /**
     * Inserts or replaces the pairs {@code keys/values[0, n)}, whose keys are unique, on up to {@code parts} threads.
     * Room for the new keys must be reserved first ({@link #reserveFor}).
     */
    void putAll(long[] keys, long[] values, int n, int parts, Parts runner) {
        final long capacity = capacity();
        if (parts <= 1 || n < batchParallelMin || capacity < PARALLEL_MIN) {
            for (int i = 0; i < n; i++) {
                put(keys[i], values[i]);
            }
            return;
        }
        final long[] homes = new long[n];
        runner.run(parts, p -> {
            for (int i = (int) ((long) n * p / parts); i < (long) n * (p + 1) / parts; i++) {
                homes[i] = homeSlot(keys[i]);
            }
        });
        final Part[] done = new Part[parts];
        runner.run(parts, p -> {
            final long from = capacity * p / parts;
            final long to = capacity * (p + 1) / parts;
            final Part part = new Part();
            for (int i = 0; i < n; i++) {
                final long home = homes[i];
                if (home >= from && home < to && !putWithin(keys[i], kept(values[i]), home, to, part)) {
                    part.defer(i);
                }
            }
            done[p] = part;
        });
        finish(done, i -> put(keys[(int) i], values[(int) i]));
    }

    /**
     * Removes the unique {@code keys[0, n)} where present, on up to {@code parts} threads: each thread removes the keys
     * whose home slot lies in its range of slots where the probe and the shift of the entries after the key stay in
     * that range, and leaves the others to a serial pass at the end.
     */
    void removeAll(long[] keys, int n, int parts, Parts runner) {
        final long capacity = capacity();
        if (parts <= 1 || n < batchParallelMin || capacity < PARALLEL_MIN) {
            for (int i = 0; i < n; i++) {
                remove(keys[i]);
            }
            return;
        }
        final long[] homes = new long[n];
        runner.run(parts, p -> {
            for (int i = (int) ((long) n * p / parts); i < (long) n * (p + 1) / parts; i++) {
                homes[i] = homeSlot(keys[i]);
            }
        });
        final Part[] done = new Part[parts];
        runner.run(parts, p -> {
            final long from = capacity * p / parts;
            final long to = capacity * (p + 1) / parts;
            final Part part = new Part();
            for (int i = 0; i < n; i++) {
                final long home = homes[i];
                if (home >= from && home < to && !removeWithin(keys[i], home, to, part)) {
                    part.defer(i);
                }
            }
            done[p] = part;
        });
        for (Part part : done) {
            size -= part.removed;
        }
        for (Part part : done) {
            for (int d = 0; d < part.deferredCount; d++) {
                remove(keys[(int) part.deferred[d]]);
            }
        }
    }

    /**
     * Removes {@code key} (home {@code home}) where present, touching only slots below {@code end}: false where its
     * probe or the run of entries after it reaches {@code end}, and nothing is written.
     */
    private boolean removeWithin(long key, long home, long end, Part part) {
        long hole = home;
        while (true) {
            if (hole >= end) {
                return false;
            }
            if (keptAt(hole) == EMPTY) {
                return true; // absent
            }
            if (keyAt(hole) == key) {
                break;
            }
            hole++;
        }
        long last = hole + 1;
        while (true) {
            if (last >= end) {
                return false;
            }
            if (keptAt(last) == EMPTY) {
                break;
            }
            last++;
        }
        // As remove: entries after the hole whose probe passed it move back into it; the run ends before `last`.
        for (long next = hole + 1; next < last; next++) {
            final long k = keyAt(next);
            if (mayFill(homeSlot(k), hole, next)) {
                set(hole, k, keptAt(next));
                hole = next;
            }
        }
        set(hole, 0L, EMPTY);
        part.removed++;
        return true;
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
            final long kept = segment[at + 1];
            if (kept == EMPTY || segment[at] == key) {
                return kept ^ NOT_FOUND;
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
        putKept(key, kept(value));
    }

    /** {@link #put} of a value as kept. */
    private void putKept(long key, long kept) {
        if (size >= limit) {
            rehash(bits + 1);
        }
        long slot = homeSlot(key);
        while (true) {
            final long[] segment = segments[(int) (slot >>> SEGMENT_SHIFT)];
            final int at = (int) (slot & SEGMENT_MASK) << 1;
            if (segment[at + 1] == EMPTY) {
                segment[at] = key;
                segment[at + 1] = kept;
                size++;
                return;
            }
            if (segment[at] == key) {
                segment[at + 1] = kept;
                return;
            }
            slot = (slot + 1) & mask;
        }
    }

    /** Removes {@code key} where present. */
    void remove(long key) {
        long hole = homeSlot(key);
        while (true) {
            if (keptAt(hole) == EMPTY) {
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
            final long kept = keptAt(next);
            if (kept == EMPTY) {
                break;
            }
            final long k = keyAt(next);
            if (mayFill(homeSlot(k), hole, next)) {
                set(hole, k, kept);
                hole = next;
            }
        }
        set(hole, 0L, EMPTY);
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

    /** A value as the table keeps it: its sign bit flipped, so that {@code NOT_FOUND} becomes {@link #EMPTY}. */
    private static long kept(long value) {
        return value ^ NOT_FOUND;
    }

    private long keptAt(long slot) {
        return segments[(int) (slot >>> SEGMENT_SHIFT)][((int) (slot & SEGMENT_MASK) << 1) + 1];
    }

    private void set(long slot, long key, long kept) {
        final long[] segment = segments[(int) (slot >>> SEGMENT_SHIFT)];
        final int at = (int) (slot & SEGMENT_MASK) << 1;
        segment[at] = key;
        segment[at + 1] = kept;
    }

    /**
     * Puts the pair in the first free slot (or its own) from {@code slot} on, below {@code end}; false where there is
     * none there, and nothing is written.
     */
    private boolean putWithin(long key, long kept, long slot, long end, Part part) {
        for (long at = slot; at < end; at++) {
            final long[] segment = segments[(int) (at >>> SEGMENT_SHIFT)];
            final int i = (int) (at & SEGMENT_MASK) << 1;
            if (segment[i + 1] == EMPTY) {
                segment[i] = key;
                segment[i + 1] = kept;
                part.added++;
                return true;
            }
            if (segment[i] == key) {
                segment[i + 1] = kept;
                return true;
            }
        }
        return false;
    }

    /**
     * Doubles (or more) on up to {@code parts} threads: part {@code p} reads the old slots of its range and on past
     * its end while they are taken (entries pushed there from its range), and moves the entries homed in its range.
     */
    private void grow(int newBits, int parts, Parts runner) {
        final long oldCapacity = capacity();
        if (parts <= 1 || oldCapacity < PARALLEL_MIN) {
            rehash(newBits);
            return;
        }
        final long[][] old = segments;
        final int shift = newBits - bits;
        final long oldSize = size;
        allocate(newBits, parts, runner);
        final Part[] done = new Part[parts];
        runner.run(parts, p -> {
            final long oldFrom = oldCapacity * p / parts;
            final long oldTo = oldCapacity * (p + 1) / parts;
            final long from = oldFrom << shift;
            final long to = oldTo << shift;
            final Part part = new Part();
            for (long scanned = 0; scanned < oldCapacity; scanned++) {
                final long at = (oldFrom + scanned) & (oldCapacity - 1);
                final long[] segment = old[(int) (at >>> SEGMENT_SHIFT)];
                final int i = (int) (at & SEGMENT_MASK) << 1;
                final long kept = segment[i + 1];
                if (kept == EMPTY) {
                    if (oldFrom + scanned >= oldTo) {
                        break;
                    }
                    continue;
                }
                final long home = homeSlot(segment[i]);
                if (home >= from && home < to && !putWithin(segment[i], kept, home, to, part)) {
                    part.defer(at);
                }
            }
            done[p] = part;
        });
        finish(done, at -> {
            final int i = (int) (at & SEGMENT_MASK) << 1;
            final long[] segment = old[(int) (at >>> SEGMENT_SHIFT)];
            putKept(segment[i], segment[i + 1]);
        });
        if (size != oldSize) {
            throw new IllegalStateException("the exact-key table lost keys growing: " + oldSize + " -> " + size);
        }
    }

    /** Counts the keys the parts added, then puts those they left, one after another ({@code putLeft}). */
    private void finish(Part[] done, LongConsumer putLeft) {
        for (Part part : done) {
            size += part.added;
        }
        for (Part part : done) {
            for (int d = 0; d < part.deferredCount; d++) {
                putLeft.accept(part.deferred[d]);
            }
        }
    }

    /** What one thread's part of a batch wrote, and the keys (or old slots) left to the serial pass. */
    private static final class Part {
        long added;
        long removed;
        long[] deferred = new long[8];
        int deferredCount;

        void defer(long at) {
            if (deferredCount == deferred.length) {
                deferred = Arrays.copyOf(deferred, 2 * deferredCount);
            }
            deferred[deferredCount++] = at;
        }
    }

    private void rehash(int newBits) {
        final long[][] old = segments;
        allocate(newBits);
        for (long[] segment : old) {
            for (int at = 0; at < segment.length; at += 2) {
                if (segment[at + 1] != EMPTY) {
                    putKept(segment[at], segment[at + 1]);
                }
            }
        }
    }

    /** An empty table of {@code 2^newBits} slots. */
    private void allocate(int newBits) {
        allocate(newBits, 1, null);
    }

    /**
     * An empty table of {@code 2^newBits} slots, its segments allocated on up to {@code parts} threads: a large
     * table's zeroing on one thread would be the serial part of every growth and build.
     */
    private void allocate(int newBits, int parts, Parts runner) {
        final long slots = 1L << newBits;
        final int count = (int) Math.max(1, slots >>> SEGMENT_SHIFT);
        final int longsEach = (int) Math.min(slots, SEGMENT_SLOTS) << 1;
        final long[][] fresh = new long[count][];
        final int threads = runner == null || slots < PARALLEL_MIN ? 1 : Math.min(parts, count);
        final IntConsumer part = p -> {
            for (int i = (int) ((long) count * p / threads); i < (long) count * (p + 1) / threads; i++) {
                fresh[i] = new long[longsEach];
            }
        };
        if (threads == 1) {
            part.accept(0);
        } else {
            runner.run(threads, part);
        }
        segments = fresh;
        bits = newBits;
        mask = slots - 1;
        limit = maxKeys(newBits);
        size = 0;
    }

    private static long maxKeys(int bits) {
        return (3L << bits) / 4;
    }

    /** The fewest bits whose table holds {@code keys} at most three quarters full. */
    private static int bitsFor(long keys) {
        int b = MIN_BITS;
        while (b < MAX_BITS && maxKeys(b) < keys) {
            b++;
        }
        if (maxKeys(b) < keys) {
            throw new IllegalStateException("the exact-key table cannot hold " + keys + " keys");
        }
        return b;
    }
}
