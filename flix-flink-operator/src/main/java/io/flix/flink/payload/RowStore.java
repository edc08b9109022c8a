package io.flix.flink.payload;

import org.apache.flink.core.memory.DataInputDeserializer;

import java.util.Arrays;

/**
 * Serialized payloads on the heap, in large byte slabs rather than one object per row, addressed by a dense
 * {@code int} row id (the value the index maps each key to). Not thread-safe.
 *
 * <h2>Row ids</h2>
 * A freed row id is handed out again, lowest first (the free ids are kept in a {@link FreeIdSet}, about a bit per
 * id), so that as a dimension is updated its rows gather at the low ids and the top of the id space can
 * be let go. Row ids never change while their row lives: the index that maps keys to them needs no update when
 * the store gives memory back.
 *
 * <h2>Rows of any length</h2>
 * A row's space is rounded up to a size class (multiples of 8 bytes up to 256, then powers of two) and cut from a
 * slab of {@link #SLAB_BYTES}; freed space goes to a free list per class and is reused by later rows of its class.
 * A row larger than a slab gets a byte array of its own, let go as soon as the row is freed. A table from row id to
 * place (12 bytes per id) lets rows move: when the dead bytes (slab space holding no live row: freed rows and slab
 * tails) exceed {@link #COMPACTION_RATIO} times the live bytes (the live rows' space plus the row id table) and at
 * least {@link #COMPACTION_MIN_DEAD_BYTES}, the store compacts: it copies the live rows into fresh slabs in row id
 * order, lets the old slabs go and cuts the row id table back to the highest live id. So the slabs hold at most
 * twice the live bytes plus {@link #COMPACTION_MIN_DEAD_BYTES}. A compaction copies the live rows once and runs
 * after at least as many bytes were freed; it holds the old and the new slabs for its duration. When the last live
 * row is freed the store lets go of everything at once but one slab, kept for the next rows (so that a dimension
 * that empties and fills again does not allocate a slab each time).
 *
 * <h2>Rows of a fixed length</h2>
 * With a fixed row length (a payload serializer of fixed length, such as that of two {@code long}s), rows are packed
 * back to back and a row's place follows from its id: no table, one live bit per id. Such rows cannot move; the
 * store lets go of the slabs above its highest live row, keeping one empty slab in reserve, so it holds the slabs
 * up to its highest live row id plus one; emptied, it keeps its first slab where that is no larger than
 * {@link #SLAB_BYTES}.
 */
public final class RowStore {

    public static final int SLAB_BYTES = 1 << 20;
    /** Dead bytes, as a multiple of the live bytes, past which the store compacts (rows of any length). */
    static final double COMPACTION_RATIO = 1.0;
    /** The fewest dead bytes worth a compaction: a small store is not compacted over and over. */
    static final long COMPACTION_MIN_DEAD_BYTES = 2L * SLAB_BYTES;
    /** The largest payload a row holds. */
    public static final int MAX_ROW_BYTES = 1 << 30;
    private static final int MAX_ROW_IDS = Integer.MAX_VALUE - 8;
    private static final int SMALL_LIMIT = 256;
    private static final int SMALL_CLASSES = SMALL_LIMIT / 8;
    private static final int CLASSES = SMALL_CLASSES + 32;
    private static final int INITIAL_ROW_IDS = 1024;
    private static final int INITIAL_SLABS = 16;
    /** Row id table bytes per id (rows of any length): an 8-byte place and a 4-byte length. */
    private static final int TABLE_BYTES_PER_ID = 12;

    /** The length of every row, or 0 for rows of any length. */
    private final int fixedLength;
    /** Fixed length only: rows per slab. */
    private final int rowsPerSlab;

    /** Any length: some entries below slabCount may be null (a let-go large row's), their indexes on a stack. */
    private byte[][] slabs;
    private int slabCount;
    private long slabBytes;
    /** Any length: indexes below slabCount of let-go slabs, reused by the next slabs. */
    private int[] freeSlabIndexes;
    private int freeSlabIndexCount;
    /** Any length: the slab small rows are cut from, -1 before the first; next free byte in it. */
    private int bumpSlab;
    private int slabFill;
    /** Any length, per size class: a stack of freed places. */
    private long[][] freeSpace;
    private int[] freeSpaceCount;

    /** Any length, per row id: slab index in the high 32 bits, offset in the low 32 bits. */
    private long[] rowAddress;
    /** Any length, per row id: payload length, or -1 for a free row id. */
    private int[] rowLength;
    /** Fixed length, per row id: a bit set while the row is live. */
    private long[] liveBits;
    /** Fixed length, per slab: its live rows. */
    private int[] slabLiveRows;

    /** Row ids below this have been handed out (each live or free); ids at or above it are fresh. */
    private int rowIdsUsed;
    /** The free row ids, all below {@link #rowIdsUsed}. */
    private FreeIdSet freeIds;

    private int liveRows;
    /** Payload bytes of the live rows. */
    private long liveBytes;
    /** Slab space of the live rows (payloads rounded up to their size class). */
    private long liveSpace;
    /** Compactions so far, for tests. */
    private int compactions;

    /** A store of rows of any length. */
    RowStore() {
        this(0);
    }

    /** A store of rows of {@code fixedLength} bytes each, or of any length where it is 0. */
    public RowStore(int fixedLength) {
        if (fixedLength < 0 || fixedLength > MAX_ROW_BYTES) {
            throw new IllegalArgumentException("fixedLength must be in [0, " + MAX_ROW_BYTES + "], was "
                    + fixedLength);
        }
        this.fixedLength = fixedLength;
        this.rowsPerSlab = fixedLength == 0 ? 0 : Math.max(1, SLAB_BYTES / fixedLength);
        reset();
    }

    /** Copies {@code length} bytes into a new row and returns its id. */
    public int add(byte[] source, int offset, int length) {
        if (length < 0 || length > MAX_ROW_BYTES) {
            throw new IllegalArgumentException("a row holds 0 to " + MAX_ROW_BYTES + " bytes, was " + length);
        }
        if (fixedLength > 0) {
            return addFixed(source, offset, length);
        }
        reserveRowId();
        final long address;
        final long space;
        if (length > SLAB_BYTES) {
            space = length;
            address = address(addSlab(new byte[length]), 0);
        } else {
            final int sizeClass = sizeClass(length);
            space = capacity(sizeClass);
            address = allocate(sizeClass, (int) space);
        }
        System.arraycopy(source, offset, slabs[(int) (address >>> 32)], (int) address, length);
        final int row = takeRowId();
        rowAddress[row] = address;
        rowLength[row] = length;
        liveRows++;
        liveBytes += length;
        liveSpace += space;
        return row;
    }

    private int addFixed(byte[] source, int offset, int length) {
        if (length != fixedLength) {
            throw new IllegalArgumentException("rows here hold " + fixedLength + " bytes, was " + length);
        }
        reserveRowId();
        final int slab = nextRowId() / rowsPerSlab;
        while (slabCount <= slab) {
            addFixedSlab();
        }
        final int row = takeRowId();
        System.arraycopy(source, offset, slabs[row / rowsPerSlab], (row % rowsPerSlab) * fixedLength, length);
        liveBits[row >>> 6] |= 1L << row;
        slabLiveRows[row / rowsPerSlab]++;
        liveRows++;
        liveBytes += length;
        liveSpace += length;
        return row;
    }

    /** Frees a live row: its id and its space are reused by later rows. */
    public void free(int row) {
        checkLive(row);
        if (fixedLength > 0) {
            liveBits[row >>> 6] &= ~(1L << row);
            slabLiveRows[row / rowsPerSlab]--;
            freeIds.add(row);
            liveRows--;
            liveBytes -= fixedLength;
            liveSpace -= fixedLength;
            if (liveRows == 0) {
                emptied();
            } else {
                releaseTopSlabs();
            }
            return;
        }
        final int length = rowLength[row];
        final long address = rowAddress[row];
        if (length > SLAB_BYTES) {
            releaseSlab((int) (address >>> 32));
            liveSpace -= length;
        } else {
            final int sizeClass = sizeClass(length);
            long[] stack = freeSpace[sizeClass];
            if (stack == null || freeSpaceCount[sizeClass] == stack.length) {
                stack = stack == null ? new long[16] : Arrays.copyOf(stack, stack.length * 2);
                freeSpace[sizeClass] = stack;
            }
            stack[freeSpaceCount[sizeClass]++] = address;
            liveSpace -= capacity(sizeClass);
        }
        rowLength[row] = -1;
        freeIds.add(row);
        liveRows--;
        liveBytes -= length;
        if (liveRows == 0) {
            emptied();
        } else if (deadBytes() >= COMPACTION_MIN_DEAD_BYTES
                && deadBytes() > COMPACTION_RATIO * (liveSpace + (long) TABLE_BYTES_PER_ID * rowIdsUsed)) {
            compact();
        }
    }

    /** The slab holding a live row; read {@link #length(int)} bytes from {@link #offset(int)}. */
    byte[] slab(int row) {
        checkLive(row);
        return fixedLength > 0 ? slabs[row / rowsPerSlab] : slabs[(int) (rowAddress[row] >>> 32)];
    }

    int offset(int row) {
        return fixedLength > 0 ? (row % rowsPerSlab) * fixedLength : (int) rowAddress[row];
    }

    int length(int row) {
        checkLive(row);
        return fixedLength > 0 ? fixedLength : rowLength[row];
    }

    /**
     * Points {@code in} at a row's bytes without checking that the row is live: for the lookup path, where the
     * index only holds live rows (one random memory access fewer per lookup). Valid until the next add or free.
     */
    public void readInto(int row, DataInputDeserializer in) {
        if (fixedLength > 0) {
            in.setBuffer(slabs[row / rowsPerSlab], (row % rowsPerSlab) * fixedLength, fixedLength);
        } else {
            final long address = rowAddress[row];
            in.setBuffer(slabs[(int) (address >>> 32)], (int) address, rowLength[row]);
        }
    }

    /** Copies a live row's bytes, for tests and messages. */
    byte[] copy(int row) {
        final int offset = offset(row);
        return Arrays.copyOfRange(slab(row), offset, offset + length(row));
    }

    public int liveRows() {
        return liveRows;
    }

    /** Payload bytes of the live rows. */
    long liveBytes() {
        return liveBytes;
    }

    int compactions() {
        return compactions;
    }

    /** Slab bytes that hold no live row. */
    long deadBytes() {
        return slabBytes - liveSpace;
    }

    /**
     * Heap held by the store's arrays: their contents, references counted as 8 bytes, object headers not
     * counted.
     */
    public long heapBytes() {
        long bytes = slabBytes + 8L * slabs.length + freeIds.heapBytes();
        if (fixedLength > 0) {
            return bytes + 8L * liveBits.length + 4L * slabLiveRows.length;
        }
        bytes += 8L * rowAddress.length + 4L * rowLength.length + 4L * freeSpaceCount.length
                + 8L * freeSpace.length + (freeSlabIndexes == null ? 0 : 4L * freeSlabIndexes.length);
        for (long[] stack : freeSpace) {
            bytes += stack == null ? 0 : 8L * stack.length;
        }
        return bytes;
    }

    /** The last live row was freed: lets go of everything but one slab of at most {@link #SLAB_BYTES}. */
    private void emptied() {
        final byte[] keep;
        if (fixedLength > 0) {
            keep = slabCount > 0 && slabs[0].length <= SLAB_BYTES ? slabs[0] : null;
        } else {
            keep = bumpSlab >= 0 ? slabs[bumpSlab] : null;
        }
        reset();
        if (keep == null) {
            return;
        }
        if (fixedLength > 0) {
            slabs[0] = keep;
            slabLiveRows[0] = 0;
            slabCount = 1;
            slabBytes = keep.length;
        } else {
            bumpSlab = addSlab(keep);
        }
    }

    private void reset() {
        slabs = new byte[INITIAL_SLABS][];
        slabCount = 0;
        slabBytes = 0;
        freeSlabIndexes = null;
        freeSlabIndexCount = 0;
        bumpSlab = -1;
        slabFill = 0;
        rowIdsUsed = 0;
        freeIds = new FreeIdSet();
        liveRows = 0;
        liveBytes = 0;
        liveSpace = 0;
        if (fixedLength > 0) {
            liveBits = new long[INITIAL_ROW_IDS / 64];
            slabLiveRows = new int[INITIAL_SLABS];
        } else {
            rowAddress = new long[INITIAL_ROW_IDS];
            rowLength = new int[INITIAL_ROW_IDS];
            freeSpace = new long[CLASSES][];
            freeSpaceCount = new int[CLASSES];
        }
    }

    // ---- row ids ----

    /** Makes sure the next {@link #takeRowId} succeeds without failing halfway through an add. */
    private void reserveRowId() {
        final int row = nextRowId();
        if (row == MAX_ROW_IDS) {
            throw new IllegalStateException("row store holds " + rowIdsUsed + " rows, the most it can");
        }
        freeIds.ensureCapacity(row + 1); // sized with the ids handed out, so that a free never allocates
        if (fixedLength > 0) {
            if ((row >>> 6) >= liveBits.length) {
                liveBits = Arrays.copyOf(liveBits, Math.max(liveBits.length * 2, (row >>> 6) + 1));
            }
        } else if (row >= rowAddress.length) {
            final int capacity = (int) Math.min(MAX_ROW_IDS, 2L * rowAddress.length);
            rowAddress = Arrays.copyOf(rowAddress, capacity);
            rowLength = Arrays.copyOf(rowLength, capacity);
        }
    }

    /** The id the next {@link #takeRowId} returns. */
    private int nextRowId() {
        final int free = freeIds.lowest();
        return free >= 0 ? free : rowIdsUsed;
    }

    /** The lowest free row id, or a fresh one. */
    private int takeRowId() {
        final int free = freeIds.pollLowest();
        return free >= 0 ? free : rowIdsUsed++;
    }

    // ---- slabs ----

    private long allocate(int sizeClass, int capacity) {
        if (freeSpaceCount[sizeClass] > 0) {
            return freeSpace[sizeClass][--freeSpaceCount[sizeClass]];
        }
        if (bumpSlab < 0 || slabFill + capacity > SLAB_BYTES) {
            bumpSlab = addSlab(new byte[SLAB_BYTES]);
            slabFill = 0;
        }
        final long address = address(bumpSlab, slabFill);
        slabFill += capacity;
        return address;
    }

    /** Rows of any length: adds a slab, at a let-go slab's index where there is one. */
    private int addSlab(byte[] slab) {
        final int index;
        if (freeSlabIndexCount > 0) {
            index = freeSlabIndexes[--freeSlabIndexCount];
        } else {
            if (slabCount == slabs.length) {
                slabs = Arrays.copyOf(slabs, slabs.length * 2);
            }
            index = slabCount++;
        }
        slabs[index] = slab;
        slabBytes += slab.length;
        return index;
    }

    /** Rows of any length: lets go of a large row's slab. */
    private void releaseSlab(int index) {
        slabBytes -= slabs[index].length;
        slabs[index] = null;
        if (freeSlabIndexes == null) {
            freeSlabIndexes = new int[16];
        } else if (freeSlabIndexCount == freeSlabIndexes.length) {
            freeSlabIndexes = Arrays.copyOf(freeSlabIndexes, freeSlabIndexCount * 2);
        }
        freeSlabIndexes[freeSlabIndexCount++] = index;
    }

    /**
     * Rows of any length: copies the live rows into fresh slabs (a large row keeps its own array), keeping their
     * ids, and cuts the row id table back to the highest live id.
     */
    private void compact() {
        compactions++;
        final byte[][] old = slabs;
        int top = rowIdsUsed;
        while (top > 0 && rowLength[top - 1] < 0) {
            top--;
        }
        slabs = new byte[Math.max(INITIAL_SLABS, Integer.highestOneBit((int) (liveSpace / SLAB_BYTES) + 1) * 2)][];
        slabCount = 0;
        slabBytes = 0;
        freeSlabIndexes = null;
        freeSlabIndexCount = 0;
        bumpSlab = -1;
        slabFill = 0;
        Arrays.fill(freeSpace, null);
        Arrays.fill(freeSpaceCount, 0);
        for (int row = 0; row < top; row++) {
            final int length = rowLength[row];
            if (length < 0) {
                continue;
            }
            final long from = rowAddress[row];
            final byte[] fromSlab = old[(int) (from >>> 32)];
            if (length > SLAB_BYTES) {
                rowAddress[row] = address(addSlab(fromSlab), 0);
            } else {
                final int sizeClass = sizeClass(length);
                final long to = allocate(sizeClass, capacity(sizeClass));
                System.arraycopy(fromSlab, (int) from, slabs[(int) (to >>> 32)], (int) to, length);
                rowAddress[row] = to;
            }
        }
        rowIdsUsed = top;
        freeIds.removeFrom(top);
        final int tableLength = Math.max(INITIAL_ROW_IDS, top);
        if (rowAddress.length > tableLength) {
            rowAddress = Arrays.copyOf(rowAddress, tableLength);
            rowLength = Arrays.copyOf(rowLength, tableLength);
        }
    }

    /** Fixed length: adds the slab of the next row ids. */
    private void addFixedSlab() {
        if (slabCount == slabs.length) {
            slabs = Arrays.copyOf(slabs, slabs.length * 2);
            slabLiveRows = Arrays.copyOf(slabLiveRows, slabs.length);
        }
        slabs[slabCount] = new byte[rowsPerSlab * fixedLength];
        slabLiveRows[slabCount] = 0;
        slabBytes += (long) rowsPerSlab * fixedLength;
        slabCount++;
    }

    /**
     * Fixed length: lets go of the empty slabs at the top but one (kept in reserve, so that rows added and freed
     * at a slab's edge do not allocate a slab each time), and of the ids they held.
     */
    private void releaseTopSlabs() {
        if (slabCount < 2 || slabLiveRows[slabCount - 1] != 0 || slabLiveRows[slabCount - 2] != 0) {
            return;
        }
        while (slabCount >= 2 && slabLiveRows[slabCount - 2] == 0) {
            slabCount--;
            slabs[slabCount] = null;
            slabBytes -= (long) rowsPerSlab * fixedLength;
        }
        rowIdsUsed = (int) Math.min(rowIdsUsed, (long) slabCount * rowsPerSlab);
        freeIds.removeFrom(rowIdsUsed);
        if (slabs.length >= 4 * Math.max(INITIAL_SLABS / 2, slabCount)) {
            slabs = Arrays.copyOf(slabs, 2 * Math.max(INITIAL_SLABS / 2, slabCount));
            slabLiveRows = Arrays.copyOf(slabLiveRows, slabs.length);
        }
        final int words = Math.max(INITIAL_ROW_IDS / 64, (rowIdsUsed + 63) >>> 6);
        if (liveBits.length >= 4 * words) {
            liveBits = Arrays.copyOf(liveBits, 2 * words);
        }
    }

    private static long address(int slab, int offset) {
        return ((long) slab << 32) | (offset & 0xFFFFFFFFL);
    }

    static int sizeClass(int length) {
        if (length <= SMALL_LIMIT) {
            return Math.max(0, (length + 7) / 8 - 1);
        }
        // 257..512 -> class 32, 513..1024 -> 33, ...
        return SMALL_CLASSES + (32 - Integer.numberOfLeadingZeros(length - 1)) - 9;
    }

    static int capacity(int sizeClass) {
        if (sizeClass < SMALL_CLASSES) {
            return (sizeClass + 1) * 8;
        }
        return 1 << (sizeClass - SMALL_CLASSES + 9);
    }

    private boolean isLive(int row) {
        return fixedLength > 0 ? (liveBits[row >>> 6] & (1L << row)) != 0 : rowLength[row] >= 0;
    }

    private void checkLive(int row) {
        if (row < 0 || row >= rowIdsUsed || !isLive(row)) {
            throw new IllegalArgumentException("row " + row + " is not a live row");
        }
    }
}
