package io.flix.flink.payload;

import io.flix.index.FlixIndex;
import io.flix.index.batch.OperationBatch;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HashSet;

/**
 * Payloads of a fixed serialized length of 1 to 8 bytes (a {@code Long}, an {@code Integer}, a {@code Double}),
 * kept in the index value itself, their bytes big-endian: no row store, nothing to free, no read of the superseded
 * value per update. A {@code Long} payload is its own value, without a serializer call.
 *
 * <p>An 8-byte payload whose bits equal {@code NOT_FOUND}, which the index cannot hold, or equal {@link #ESCAPED},
 * is stored as {@link #ESCAPED}, with the keys whose payload has the bits of {@code NOT_FOUND} kept on the side.
 * Such an update is {@link #isolated}: alone in its batch, so that every lookup sees the side set as of its batch's
 * start.
 */
public final class InlinePayloads<P> implements PayloadStore<P> {

    /**
     * The value stored for a payload whose bits are {@code NOT_FOUND} or this value itself; which of the two it
     * stands for is kept per key on the side. An arbitrary, unlikely value.
     */
    public static final long ESCAPED = Long.MIN_VALUE + 0x5EED_F11AL;
    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;
    private static final SealedUpdates NOTHING_TO_APPLY = results -> { };
    private static final VarHandle BIG_ENDIAN_LONGS =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private final TypeSerializer<P> serializer;
    private final int length;
    /** A {@code Long} payload: the value is the payload. */
    private final boolean longPayload;
    /** 8-byte payloads: keys stored as {@link #ESCAPED} whose payload's bits are {@code NOT_FOUND}. */
    private final HashSet<Long> notFoundBitsKeys = new HashSet<>();
    /** The escaped update of the current (one-update) batch, applied to the side set once it ran. */
    private boolean escapedPending;
    private long escapedKey;
    private boolean escapedIsNotFoundBits;
    /** The keys of the batch's updates, to drop the side-set entries they replace. */
    private long[] updateKeys;
    private int updateCount;
    private final byte[] bytes = new byte[8];
    private final DataOutputSerializer serializeBuffer = new DataOutputSerializer(16);
    /** Reads for {@link #payload}: the store's own thread. */
    private final Reader<P> ownReader;

    InlinePayloads(TypeSerializer<P> serializer, int batchCapacity) {
        this.serializer = serializer;
        this.length = serializer.getLength();
        if (length < 1 || length > 8) {
            throw new IllegalArgumentException("inline payloads have 1 to 8 bytes, the serializer declares "
                    + length);
        }
        this.longPayload = serializer instanceof LongSerializer;
        this.updateKeys = new long[Math.max(1, batchCapacity)];
        this.ownReader = reader();
    }

    @Override
    public int encoding() {
        return length;
    }

    @Override
    public TypeSerializer<P> serializer() {
        return serializer;
    }

    /** The payload's bytes, big-endian, as a long. */
    @Override
    public long encode(P payload) throws IOException {
        if (longPayload) {
            return (Long) payload;
        }
        serializeBuffer.clear();
        serializer.serialize(payload, serializeBuffer);
        if (serializeBuffer.length() != length) {
            throw new IOException("the serializer declares " + length + " bytes and wrote "
                    + serializeBuffer.length());
        }
        return pack(serializeBuffer.getSharedBuffer(), 0, length);
    }

    @Override
    public long encodeSerialized(long key, byte[] source, int offset, int sourceLength) throws IOException {
        checkLength(key, sourceLength);
        return pack(source, offset, length);
    }

    private void checkLength(long key, int sourceLength) throws IOException {
        if (sourceLength != length) {
            throw new IOException("key " + key + " has a payload of " + sourceLength + " bytes; the payload "
                    + "serializer " + serializer.getClass().getName() + " stores payloads "
                    + PayloadStore.describeEncoding(length));
        }
    }

    @Override
    public boolean isolated(long encoded) {
        return length == 8 && (encoded == NOT_FOUND || encoded == ESCAPED);
    }

    @Override
    public void upsert(OperationBatch batch, long key, long encoded) {
        recordUpdate(key);
        if (isolated(encoded)) {
            batch.upsert(key, ESCAPED);
            escapedPending = true;
            escapedKey = key;
            escapedIsNotFoundBits = encoded == NOT_FOUND;
        } else {
            batch.upsert(key, encoded);
        }
    }

    @Override
    public void delete(OperationBatch batch, long key) {
        recordUpdate(key);
        batch.delete(key);
    }

    /** While no key's payload has the bits of {@code NOT_FOUND}: no update of a batch needs noting. */
    @Override
    public boolean takesUpdatesByPosition() {
        return notFoundBitsKeys.isEmpty() && !escapedPending;
    }

    /** Only while the side set has keys: it gains none during a batch, only in {@link #batchApplied}. */
    private void recordUpdate(long key) {
        if (notFoundBitsKeys.isEmpty()) {
            return;
        }
        if (updateCount == updateKeys.length) {
            updateKeys = Arrays.copyOf(updateKeys, updateCount * 2);
        }
        updateKeys[updateCount++] = key;
    }

    @Override
    public SealedUpdates sealBatch() {
        final long[] keys = updateCount == 0 ? null : Arrays.copyOf(updateKeys, updateCount);
        final boolean escaped = escapedPending;
        final long escapedKeyOfBatch = escapedKey;
        final boolean escapedNotFoundBits = escapedIsNotFoundBits;
        updateCount = 0;
        escapedPending = false;
        if (keys == null && !escaped) {
            return NOTHING_TO_APPLY;
        }
        return results -> {
            // the batch replaced or deleted these keys' escaped values, if any
            if (keys != null) {
                for (long key : keys) {
                    notFoundBitsKeys.remove(key);
                }
            }
            if (escaped && escapedNotFoundBits) {
                notFoundBitsKeys.add(escapedKeyOfBatch);
            }
        };
    }

    @Override
    public P payload(long stored, long key) throws IOException {
        return ownReader.payload(stored, key);
    }

    @Override
    @SuppressWarnings("unchecked")
    public Reader<P> reader() {
        final TypeSerializer<P> readSerializer = serializer.duplicate();
        final byte[] readBytes = new byte[8];
        final DataInputDeserializer in = new DataInputDeserializer();
        return (stored, key) -> {
            final long bits = bitsOf(stored, key);
            if (longPayload) {
                return (P) Long.valueOf(bits);
            }
            unpack(bits, readBytes, length);
            in.setBuffer(readBytes, 0, length);
            try {
                return readSerializer.deserialize(in);
            } catch (Exception | StackOverflowError e) {
                throw new IOException("the stored payload of key " + key + " does not deserialize: " + e, e);
            }
        };
    }

    /** The payload's bits for a stored value. */
    private long bitsOf(long stored, long key) {
        return stored == ESCAPED && length == 8 && notFoundBitsKeys.contains(key) ? NOT_FOUND : stored;
    }

    @Override
    public void writePayload(long stored, long key, DataOutputView out) throws IOException {
        unpack(bitsOf(stored, key), bytes, length);
        out.writeInt(length);
        out.write(bytes, 0, length);
    }

    @Override
    public long restore(long key, byte[] source, int offset, int sourceLength) throws IOException {
        checkLength(key, sourceLength);
        final long bits = pack(source, offset, length);
        if (isolated(bits)) {
            if (bits == NOT_FOUND) {
                notFoundBitsKeys.add(key);
            }
            return ESCAPED;
        }
        return bits;
    }

    @Override
    public int liveRows() {
        return -1;
    }

    @Override
    public long heapBytes() {
        return 0;
    }

    /** Keys whose payload is kept as escaped, for tests. */
    public int escapedKeys() {
        return notFoundBitsKeys.size();
    }

    private static long pack(byte[] source, int offset, int length) {
        if (length == 8) {
            return (long) BIG_ENDIAN_LONGS.get(source, offset);
        }
        long bits = 0;
        for (int i = 0; i < length; i++) {
            bits = (bits << 8) | (source[offset + i] & 0xFF);
        }
        return bits;
    }

    private static void unpack(long bits, byte[] target, int length) {
        for (int i = length - 1; i >= 0; i--) {
            target[i] = (byte) bits;
            bits >>>= 8;
        }
    }
}
