package io.flix.flink.shared;

import io.flix.flink.dimension.SerializedUpdates;

import org.apache.flink.core.memory.DataOutputSerializer;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A block of updates as the shared dimension's writers receive them: per update, in order, its index key and either
 * a delete or the payload as the payload serializer wrote it. Encoded once, before the update stream is broadcast,
 * so that every task manager applies the same bytes and an update that cannot be encoded is rejected once. Updates
 * travel in blocks because the broadcast hands every record to every writer subtask: one record of a few thousand
 * updates costs the applier one copy of its bytes and the other writers a skip of them, where a record per update
 * costs each writer a deserialization.
 *
 * <p>Layout of {@link #data}: per update the key (8 bytes), the payload's length (4 bytes; -1 for a delete), the
 * payload's bytes. Serialized by {@link EncodedUpdatesSerializer}, which leaves {@link #data} null where a writer that
 * does not apply skips the bytes.
 */
public final class EncodedUpdates {

    private static final int DELETE = -1;
    /** As {@link DataOutputSerializer} writes them: big-endian. */
    private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);
    private static final VarHandle INTS = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.BIG_ENDIAN);

    /** Updates in {@link #data}. */
    public int count;
    public byte[] data;

    public EncodedUpdates() {
    }

    public EncodedUpdates(int count, byte[] data) {
        this.count = count;
        this.data = data;
    }

    /**
     * Decodes the block into {@code into} (appending, in order). The payloads are views of {@link #data}, not copies.
     *
     * @throws IllegalStateException where the bytes do not hold {@link #count} well-formed updates
     */
    public void decodeInto(SerializedUpdates into) {
        final byte[] bytes = data;
        if (bytes == null) {
            throw new IllegalStateException("a block of " + count + " encoded updates was read without its bytes: "
                    + "its reader skips blocks it does not apply");
        }
        int at = 0;
        for (int i = 0; i < count; i++) {
            if (at + 12 > bytes.length) {
                throw malformed(i, at);
            }
            final long key = readLong(bytes, at);
            final int length = readInt(bytes, at + 8);
            at += 12;
            if (length < DELETE || (length > 0 && at + length > bytes.length)) {
                throw malformed(i, at);
            }
            if (length == DELETE) {
                into.delete(key);
            } else {
                into.upsertView(key, bytes, at, length);
            }
            at += Math.max(0, length);
        }
        if (at != bytes.length) {
            throw new IllegalStateException("a block of " + count + " encoded updates has " + (bytes.length - at)
                    + " bytes after its last update");
        }
    }

    private IllegalStateException malformed(int update, int offset) {
        return new IllegalStateException("update " + update + " of a block of " + count
                + " encoded updates is cut off or malformed at byte " + offset + " of " + data.length);
    }

    private static long readLong(byte[] b, int at) {
        return (long) LONGS.get(b, at);
    }

    private static int readInt(byte[] b, int at) {
        return (int) INTS.get(b, at);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EncodedUpdates u && u.count == count && Arrays.equals(u.data, data);
    }

    @Override
    public int hashCode() {
        return count * 31 + Arrays.hashCode(data);
    }

    @Override
    public String toString() {
        return count + " encoded updates (" + (data == null ? 0 : data.length) + " bytes)";
    }

    /** Writes a block, update by update. */
    public static final class Builder {

        private final DataOutputSerializer out;
        private int count;
        private int updateStart = -1;

        public Builder(int initialBytes) {
            out = new DataOutputSerializer(initialBytes);
        }

        public void delete(long key) throws IOException {
            out.writeLong(key);
            out.writeInt(DELETE);
            count++;
        }

        /**
         * Starts an upsert of {@code key}: its payload is written to {@link #payloadOutput} next, then
         * {@link #endUpsert} or {@link #abandonUpsert} is called.
         */
        public void startUpsert(long key) throws IOException {
            updateStart = out.length();
            out.writeLong(key);
            out.writeInt(0);
        }

        public DataOutputSerializer payloadOutput() {
            return out;
        }

        /** Bytes the payload of the upsert being written has so far. */
        public int payloadLength() {
            return out.length() - updateStart - 12;
        }

        public void endUpsert() throws IOException {
            out.writeIntUnsafe(payloadLength(), updateStart + 8);
            updateStart = -1;
            count++;
        }

        /** Drops the upsert being written, as if it was never started. */
        public void abandonUpsert() {
            out.setPosition(updateStart);
            updateStart = -1;
        }

        public void upsert(long key, byte[] payload) throws IOException {
            startUpsert(key);
            out.write(payload);
            endUpsert();
        }

        public int count() {
            return count;
        }

        public int bytes() {
            return out.length();
        }

        /** The block written so far; the builder starts a new one. */
        public EncodedUpdates build() {
            final EncodedUpdates block = new EncodedUpdates(count, out.getCopyOfBuffer());
            out.clear();
            count = 0;
            return block;
        }
    }
}
