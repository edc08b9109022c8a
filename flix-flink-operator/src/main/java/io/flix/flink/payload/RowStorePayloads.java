package io.flix.flink.payload;

import io.flix.index.batch.OperationBatch;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;

/**
 * Payloads of a variable length, or of a fixed length above 8 bytes, serialized into a {@link RowStore}; the index
 * maps each key to its row id. A replaced or deleted key's row is freed once its batch ran (each update reads, in
 * the same batch, the row it supersedes: {@link RowUpdates}) and reused.
 */
final class RowStorePayloads<P> implements PayloadStore<P> {

    private final TypeSerializer<P> serializer;
    private final RowStore rows;
    private final RowUpdates rowUpdates;
    private final DataOutputSerializer serializeBuffer = new DataOutputSerializer(256);
    /** Reads for {@link #payload}: the store's own thread. */
    private final Reader<P> ownReader;

    RowStorePayloads(TypeSerializer<P> serializer, int batchCapacity) {
        this.serializer = serializer;
        // a fixed-length payload needs no per-row bookkeeping
        this.rows = new RowStore(Math.max(0, serializer.getLength()));
        this.rowUpdates = new RowUpdates(rows, batchCapacity);
        this.ownReader = reader();
    }

    @Override
    public int encoding() {
        return ROW_STORE;
    }

    @Override
    public TypeSerializer<P> serializer() {
        return serializer;
    }

    /** Serializes the payload into a new row: its id. */
    @Override
    public long encode(P payload) throws IOException {
        serializeBuffer.clear();
        serializer.serialize(payload, serializeBuffer);
        return rows.add(serializeBuffer.getSharedBuffer(), 0, serializeBuffer.length());
    }

    @Override
    public long encodeSerialized(long key, byte[] bytes, int offset, int length) throws IOException {
        return restore(key, bytes, offset, length);
    }

    @Override
    public boolean isolated(long encoded) {
        return false;
    }

    @Override
    public void upsert(OperationBatch batch, long key, long encoded) {
        rowUpdates.upsert(batch, key, (int) encoded);
    }

    @Override
    public void delete(OperationBatch batch, long key) {
        rowUpdates.delete(batch, key);
    }

    @Override
    public SealedUpdates sealBatch() {
        return rowUpdates.seal()::releaseSuperseded;
    }

    @Override
    public P payload(long stored, long key) throws IOException {
        return ownReader.payload(stored, key);
    }

    @Override
    public Reader<P> reader() {
        final TypeSerializer<P> readSerializer = serializer.duplicate();
        final DataInputDeserializer in = new DataInputDeserializer();
        return (stored, key) -> {
            rows.readInto((int) stored, in);
            try {
                return readSerializer.deserialize(in);
            } catch (Exception | StackOverflowError e) {
                throw new IOException("the stored payload of key " + key + " does not deserialize: " + e, e);
            }
        };
    }

    @Override
    public void writePayload(long stored, long key, DataOutputView out) throws IOException {
        final int row = (int) stored;
        final int length = rows.length(row);
        out.writeInt(length);
        out.write(rows.slab(row), rows.offset(row), length);
    }

    @Override
    public long restore(long key, byte[] bytes, int offset, int length) throws IOException {
        try {
            return rows.add(bytes, offset, length);
        } catch (IllegalArgumentException e) {
            throw new IOException("key " + key + " has a payload of " + length + " bytes; the payload serializer "
                    + serializer.getClass().getName() + " stores payloads " + PayloadStore.describeEncoding(ROW_STORE)
                    + ": " + e.getMessage(), e);
        }
    }

    @Override
    public int liveRows() {
        return rows.liveRows();
    }

    @Override
    public long heapBytes() {
        return rows.heapBytes();
    }
}
