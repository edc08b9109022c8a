package io.flix.flink.state;

import org.apache.flink.core.memory.DataInputView;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * A {@link DataInputView} over a stream that reads it in large blocks and decodes numbers straight from the block.
 * A restore reads one long, one int and a few bytes per key; through {@code DataInputStream} over a
 * {@code BufferedInputStream} each of those is one or more synchronized calls, which bounded the restore of a large
 * dimension. Numbers are big-endian, as {@code java.io.DataOutput} writes them. Not thread-safe; reads ahead of what
 * the caller consumed by up to one block.
 */
public final class BlockDataInput implements DataInputView {

    /** Block size where none is given. */
    public static final int DEFAULT_BLOCK_BYTES = 1 << 20;

    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle INTS = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle SHORTS = MethodHandles.byteArrayViewVarHandle(short[].class,
            ByteOrder.BIG_ENDIAN);

    private final InputStream in;
    private final byte[] block;
    private int position;
    private int limit;
    private int windowStart;

    public BlockDataInput(InputStream in) {
        this(in, DEFAULT_BLOCK_BYTES);
    }

    public BlockDataInput(InputStream in, int blockBytes) {
        if (blockBytes < Long.BYTES) {
            throw new IllegalArgumentException("a block holds at least " + Long.BYTES + " bytes, was " + blockBytes);
        }
        this.in = in;
        this.block = new byte[blockBytes];
    }

    /**
     * Makes {@code bytes} (at most the block's size) readable from {@code position} on, moving what is left to the
     * block's start and reading behind it; false where the stream ends first.
     */
    private boolean fill(int bytes) throws IOException {
        if (limit - position >= bytes) {
            return true;
        }
        final int left = limit - position;
        System.arraycopy(block, position, block, 0, left);
        position = 0;
        limit = left;
        while (limit < bytes) {
            final int read = in.read(block, limit, block.length - limit);
            if (read < 0) {
                return false;
            }
            limit += read;
        }
        return true;
    }

    private void require(int bytes) throws IOException {
        if (!fill(bytes)) {
            throw new EOFException("the stream ended " + (limit - position) + " bytes into a value of " + bytes
                    + " bytes");
        }
    }

    /**
     * Makes the next {@code length} bytes (at most the block's size) readable in place and consumes them: they lie in
     * the returned array from {@link #windowStart()} on, valid until the next read.
     */
    byte[] window(int length) throws IOException {
        require(length);
        windowStart = position;
        position += length;
        return block;
    }

    /** Where the bytes of the last {@link #window} start. */
    int windowStart() {
        return windowStart;
    }

    /** The most bytes one {@link #window} holds. */
    int blockBytes() {
        return block.length;
    }

    /** Whether the stream has no byte left past what was read (reading ahead to find out). */
    public boolean atEnd() throws IOException {
        return position == limit && !fill(1);
    }

    @Override
    public long readLong() throws IOException {
        require(Long.BYTES);
        final long value = (long) LONGS.get(block, position);
        position += Long.BYTES;
        return value;
    }

    @Override
    public int readInt() throws IOException {
        require(Integer.BYTES);
        final int value = (int) INTS.get(block, position);
        position += Integer.BYTES;
        return value;
    }

    @Override
    public short readShort() throws IOException {
        require(Short.BYTES);
        final short value = (short) SHORTS.get(block, position);
        position += Short.BYTES;
        return value;
    }

    @Override
    public int readUnsignedShort() throws IOException {
        return readShort() & 0xFFFF;
    }

    @Override
    public char readChar() throws IOException {
        return (char) readShort();
    }

    @Override
    public byte readByte() throws IOException {
        require(1);
        return block[position++];
    }

    @Override
    public int readUnsignedByte() throws IOException {
        return readByte() & 0xFF;
    }

    @Override
    public boolean readBoolean() throws IOException {
        return readByte() != 0;
    }

    @Override
    public float readFloat() throws IOException {
        return Float.intBitsToFloat(readInt());
    }

    @Override
    public double readDouble() throws IOException {
        return Double.longBitsToDouble(readLong());
    }

    @Override
    public int read(byte[] target, int offset, int length) throws IOException {
        if (length == 0) {
            return 0;
        }
        if (position == limit && !fill(1)) {
            return -1;
        }
        final int n = Math.min(length, limit - position);
        System.arraycopy(block, position, target, offset, n);
        position += n;
        return n;
    }

    @Override
    public int read(byte[] target) throws IOException {
        return read(target, 0, target.length);
    }

    @Override
    public void readFully(byte[] target, int offset, int length) throws IOException {
        int done = 0;
        while (done < length) {
            final int n = read(target, offset + done, length - done);
            if (n < 0) {
                throw new EOFException("the stream ended " + done + " bytes into a field of " + length + " bytes");
            }
            done += n;
        }
    }

    @Override
    public void readFully(byte[] target) throws IOException {
        readFully(target, 0, target.length);
    }

    @Override
    public int skipBytes(int n) throws IOException {
        int skipped = 0;
        while (skipped < n && (position < limit || fill(1))) {
            final int step = Math.min(n - skipped, limit - position);
            position += step;
            skipped += step;
        }
        return skipped;
    }

    @Override
    public void skipBytesToRead(int numBytes) throws IOException {
        if (skipBytes(numBytes) != numBytes) {
            throw new EOFException("the stream ended before " + numBytes + " bytes could be skipped");
        }
    }

    @Override
    public String readUTF() throws IOException {
        return DataInputStream.readUTF(this);
    }

    @Override
    public String readLine() throws IOException {
        final StringBuilder line = new StringBuilder();
        while (position < limit || fill(1)) {
            final char c = (char) (block[position++] & 0xFF);
            if (c == '\n') {
                return line.toString();
            }
            if (c == '\r') {
                if ((position < limit || fill(1)) && block[position] == '\n') {
                    position++;
                }
                return line.toString();
            }
            line.append(c);
        }
        return line.length() == 0 ? null : line.toString();
    }
}
