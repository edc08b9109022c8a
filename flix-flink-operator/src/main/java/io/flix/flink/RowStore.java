package io.flix.flink;

import java.util.Arrays;

/**
 * Serialized payloads on the heap, in large byte slabs rather than one object per row, addressed by a dense
 * {@code int} row id (the value the index maps each key to).
 *
 * <p>A row's space is rounded up to a size class (multiples of 8 bytes up to 256, then powers of two); freed space
 * and freed row ids go to free lists and are reused by later rows, so a dimension that is replaced over and over
 * does not grow. Rows above the slab size get a slab of their own, reused the same way.
 *
 * <p>With a fixed row length (a payload serializer of fixed length, such as a {@code Long}'s), rows are packed
 * back to back and a row's place follows from its id: no per-row bookkeeping but one live bit. Not thread-safe.
 */
public final class RowStore {

    static final int SLAB_BYTES = 1 << 20;
    private static final int SMALL_LIMIT = 256;
    private static final int SMALL_CLASSES = SMALL_LIMIT / 8;
    private static final int CLASSES = SMALL_CLASSES + 32;

    private byte[][] slabs = new byte[16][];
    private int slabCount;
    /** The slab small rows are cut from, -1 before the first; large rows get slabs of their own. */
    private int bumpSlab = -1;
    /** Next free byte in the bump slab. */
    private int slabFill;

    /** Per row id: slab index in the high 32 bits, offset in the low 32 bits. */
    private long[] rowAddress = new long[1024];
    /** Per row id: payload length, or -1 for a free row id. */
    private int[] rowLength = new int[1024];
    /** Row ids ever handed out. */
    private int rowIdsUsed;
    private int liveRows;
    private int[] freeRowIds = new int[64];
    private int freeRowIdCount;

    /** Per size class: a stack of freed addresses. */
    private final long[][] freeSpace = new long[CLASSES][];
    private final int[] freeSpaceCount = new int[CLASSES];

    private long liveBytes;
    private long slabBytes;

    /** The length of every row, or 0 for rows of any length. */
    private final int fixedLength;
    /** Fixed length only: rows per slab. */
    private final int rowsPerSlab;
    /** Fixed length only: bit per row id, set while the row is live. */
    private long[] liveBits;

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
        this.liveBits = fixedLength == 0 ? null : new long[16];
        if (fixedLength > 0) {
            rowAddress = null;
            rowLength = null;
        }
    }

    /** The largest payload a row holds. */
    static final int MAX_ROW_BYTES = 1 << 30;

    /** Copies {@code length} bytes into a new row and returns its id. */
    public int add(byte[] source, int offset, int length) {
        if (length < 0 || length > MAX_ROW_BYTES) {
            throw new IllegalArgumentException("a row holds 0 to " + MAX_ROW_BYTES + " bytes, was " + length);
        }
        if (fixedLength > 0) {
            return addFixed(source, offset, length);
        }
        final int sizeClass = sizeClass(length);
        final long address = allocate(sizeClass, capacity(sizeClass));
        System.arraycopy(source, offset, slabs[(int) (address >>> 32)], (int) address, length);
        final int row = newRowId();
        rowAddress[row] = address;
        rowLength[row] = length;
        liveRows++;
        liveBytes += length;
        return row;
    }

    private int addFixed(byte[] source, int offset, int length) {
        if (length != fixedLength) {
            throw new IllegalArgumentException("rows here hold " + fixedLength + " bytes, was " + length);
        }
        final int row;
        if (freeRowIdCount > 0) {
            row = freeRowIds[--freeRowIdCount];
        } else {
            if (rowIdsUsed == Integer.MAX_VALUE - 8) {
                throw new IllegalStateException("row store holds " + rowIdsUsed + " rows, the most it can");
            }
            row = rowIdsUsed++;
            while (slabCount <= row / rowsPerSlab) {
                addSlab(rowsPerSlab * fixedLength);
            }
            if ((row >>> 6) >= liveBits.length) {
                liveBits = Arrays.copyOf(liveBits, liveBits.length * 2);
            }
        }
        System.arraycopy(source, offset, slabs[row / rowsPerSlab], (row % rowsPerSlab) * fixedLength, length);
        liveBits[row >>> 6] |= 1L << row;
        liveRows++;
        liveBytes += length;
        return row;
    }

    /** Frees a live row: its id and its space are reused by later rows. */
    public void free(int row) {
        checkLive(row);
        if (fixedLength > 0) {
            liveBits[row >>> 6] &= ~(1L << row);
            pushFreeRowId(row);
            liveRows--;
            liveBytes -= fixedLength;
            return;
        }
        final int length = rowLength[row];
        final int sizeClass = sizeClass(length);
        long[] stack = freeSpace[sizeClass];
        if (stack == null || freeSpaceCount[sizeClass] == stack.length) {
            stack = stack == null ? new long[16] : Arrays.copyOf(stack, stack.length * 2);
            freeSpace[sizeClass] = stack;
        }
        stack[freeSpaceCount[sizeClass]++] = rowAddress[row];
        rowLength[row] = -1;
        pushFreeRowId(row);
        liveRows--;
        liveBytes -= length;
    }

    private void pushFreeRowId(int row) {
        if (freeRowIdCount == freeRowIds.length) {
            freeRowIds = Arrays.copyOf(freeRowIds, freeRowIds.length * 2);
        }
        freeRowIds[freeRowIdCount++] = row;
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
     * index only holds live rows (one random memory access fewer per lookup).
     */
    public void readInto(int row, org.apache.flink.core.memory.DataInputDeserializer in) {
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

    /** Heap held: slabs plus the per-row arrays. */
    public long heapBytes() {
        final long perRow = fixedLength > 0 ? 8L * liveBits.length : 12L * rowAddress.length;
        return slabBytes + perRow + 4L * freeRowIds.length;
    }

    /** Forgets every row; keeps nothing. */
    void clear() {
        slabs = new byte[16][];
        slabCount = 0;
        bumpSlab = -1;
        slabFill = 0;
        rowAddress = fixedLength > 0 ? null : new long[1024];
        rowLength = fixedLength > 0 ? null : new int[1024];
        liveBits = fixedLength > 0 ? new long[16] : null;
        rowIdsUsed = 0;
        liveRows = 0;
        freeRowIdCount = 0;
        Arrays.fill(freeSpace, null);
        Arrays.fill(freeSpaceCount, 0);
        liveBytes = 0;
        slabBytes = 0;
    }

    private int newRowId() {
        if (freeRowIdCount > 0) {
            return freeRowIds[--freeRowIdCount];
        }
        if (rowIdsUsed == rowAddress.length) {
            final int capacity = (int) Math.min(Integer.MAX_VALUE - 8, 2L * rowAddress.length);
            if (capacity == rowIdsUsed) {
                throw new IllegalStateException("row store holds " + rowIdsUsed + " rows, the most it can");
            }
            rowAddress = Arrays.copyOf(rowAddress, capacity);
            rowLength = Arrays.copyOf(rowLength, capacity);
        }
        return rowIdsUsed++;
    }

    private long allocate(int sizeClass, int capacity) {
        if (freeSpaceCount[sizeClass] > 0) {
            return freeSpace[sizeClass][--freeSpaceCount[sizeClass]];
        }
        if (capacity > SLAB_BYTES) {
            return address(addSlab(capacity), 0);
        }
        if (bumpSlab < 0 || slabFill + capacity > SLAB_BYTES) {
            bumpSlab = addSlab(SLAB_BYTES);
            slabFill = 0;
        }
        final long address = address(bumpSlab, slabFill);
        slabFill += capacity;
        return address;
    }

    private int addSlab(int bytes) {
        if (slabCount == slabs.length) {
            slabs = Arrays.copyOf(slabs, slabs.length * 2);
        }
        slabs[slabCount] = new byte[bytes];
        slabBytes += bytes;
        return slabCount++;
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

    private void checkLive(int row) {
        final boolean live = row >= 0 && row < rowIdsUsed
                && (fixedLength > 0 ? (liveBits[row >>> 6] & (1L << row)) != 0 : rowLength[row] >= 0);
        if (!live) {
            throw new IllegalArgumentException("row " + row + " is not a live row");
        }
    }
}
