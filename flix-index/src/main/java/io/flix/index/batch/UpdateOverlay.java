package io.flix.index.batch;

import io.flix.index.FlixIndex;

/**
 * A batch's updates as the batch is walked in arrival order: each updated key with its value at the current point,
 * {@link FlixIndex#NOT_FOUND} once deleted. Entries are numbered in the order of their keys' first update, which is
 * the order the net effect is written in. Lookups of keys the batch has not updated so far find no entry and read the
 * pre-batch index.
 *
 * <p>Open addressing with linear probing over at least twice as many slots as the batch has updates, so a probe
 * rarely passes a few slots. Nothing is removed within a batch; {@link #reset} empties only the slots the last batch
 * took, so a small batch after a large one costs little. Not thread-safe (one per engine).
 */
final class UpdateOverlay {

    /** Fibonacci hashing: the product's top bits spread sequential and strided keys over the slots. */
    private static final long GOLDEN = 0x9E3779B97F4A7C15L;
    private static final int MIN_SLOT_BITS = 4;
    private static final int MAX_SLOT_BITS = 30;
    /** The most updates a batch may have here: twice as many slots fit one Java array. */
    static final int MAX_UPDATES = 1 << (MAX_SLOT_BITS - 1);

    private long[] slotKeys = new long[1 << MIN_SLOT_BITS];
    /** Per slot: its entry + 1, 0 where empty. */
    private int[] slotEntries = new int[1 << MIN_SLOT_BITS];
    private int slotShift = Long.SIZE - MIN_SLOT_BITS;
    private int slotMask = (1 << MIN_SLOT_BITS) - 1;

    private long[] values = new long[0];
    /** Per entry: the slot its key took (and keeps: nothing moves within a batch). */
    private int[] slots = new int[0];
    private int size;

    /** Empties the overlay and makes room for {@code updates} distinct keys at most. */
    void reset(int updates) {
        if (updates > MAX_UPDATES) {
            throw new IllegalArgumentException("a batch of " + updates + " updates is too large to overlay (at most "
                    + MAX_UPDATES + ")");
        }
        for (int e = 0; e < size; e++) {
            slotEntries[slots[e]] = 0;
        }
        size = 0;
        final long wanted = Math.max(1L << MIN_SLOT_BITS, 2L * updates);
        if (wanted > slotEntries.length) {
            final int bits = Long.SIZE - Long.numberOfLeadingZeros(wanted - 1);
            slotKeys = new long[1 << bits];
            slotEntries = new int[1 << bits];
            slotShift = Long.SIZE - bits;
            slotMask = (1 << bits) - 1;
        }
        if (values.length < updates) {
            values = new long[updates];
            slots = new int[updates];
        }
    }

    /** Sets {@code key}'s value from here on: a value, or {@link FlixIndex#NOT_FOUND} for a delete. */
    void put(long key, long value) {
        int slot = home(key);
        while (true) {
            final int entry = slotEntries[slot] - 1;
            if (entry < 0) {
                slotKeys[slot] = key;
                slotEntries[slot] = size + 1;
                values[size] = value;
                slots[size] = slot;
                size++;
                return;
            }
            if (slotKeys[slot] == key) {
                values[entry] = value;
                return;
            }
            slot = (slot + 1) & slotMask;
        }
    }

    /** The entry of {@code key}, or -1 where the batch has not updated it so far. */
    int entryOf(long key) {
        int slot = home(key);
        while (true) {
            final int entry = slotEntries[slot] - 1;
            if (entry < 0 || slotKeys[slot] == key) {
                return entry;
            }
            slot = (slot + 1) & slotMask;
        }
    }

    /** Distinct keys updated so far. */
    int size() {
        return size;
    }

    long key(int entry) {
        return slotKeys[slots[entry]];
    }

    /** The entry's value at the current point: {@link FlixIndex#NOT_FOUND} where its last update deleted it. */
    long value(int entry) {
        return values[entry];
    }

    private int home(long key) {
        return (int) ((key * GOLDEN) >>> slotShift);
    }
}
