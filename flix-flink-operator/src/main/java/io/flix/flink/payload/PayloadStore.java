package io.flix.flink.payload;

import io.flix.index.batch.BatchResults;
import io.flix.index.batch.OperationBatch;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;

/**
 * Where the payload of each key is kept: the index maps a key to a {@code long} value that stands for its payload,
 * either the payload itself ({@link InlinePayloads}: a serialized length of 1 to 8 bytes) or the id of a row of a
 * {@link RowStore} ({@link RowStorePayloads}). It owns the payload serializer, and puts each update into an
 * {@link OperationBatch} with whatever the store needs to know once the batch ran. Not thread-safe.
 *
 * @param <P> payloads
 */
public interface PayloadStore<P> {

    /** The encoding of a row-store payload in {@link #encoding()}. */
    int ROW_STORE = 0;

    /** A store for the payloads of a serializer: inline where it declares a length of 1 to 8 bytes. */
    static <P> PayloadStore<P> of(TypeSerializer<P> serializer, int batchCapacity) {
        final int length = serializer.getLength();
        return length >= 1 && length <= 8 ? new InlinePayloads<>(serializer, batchCapacity)
                : new RowStorePayloads<>(serializer, batchCapacity);
    }

    /** How the store holds payloads: their length where inline (1 to 8), {@link #ROW_STORE} otherwise. */
    int encoding();

    /** Words for an {@link #encoding()}, for messages. */
    static String describeEncoding(int encoding) {
        return encoding == ROW_STORE ? "in the row store" : "inline in " + encoding + " bytes";
    }

    TypeSerializer<P> serializer();

    /**
     * Serializes a payload into what {@link #upsert} stores; a row-store payload takes its row here.
     *
     * @throws Exception what the serializer threw: the update is to be rejected, nothing was stored
     */
    long encode(P payload) throws Exception;

    /**
     * Takes a payload's serialized bytes, as the payload serializer wrote them, into what {@link #upsert} stores; a
     * row-store payload takes its row here.
     *
     * @throws IOException where the bytes do not fit the store (an inline payload of another length); nothing was
     *     stored
     */
    long encodeSerialized(long key, byte[] bytes, int offset, int length) throws IOException;

    /** Whether an encoded payload must be alone in its batch: flush before and after {@link #upsert}. */
    boolean isolated(long encoded);

    /** Adds an upsert of {@code key} to {@code encoded} (from {@link #encode}) to the batch. */
    void upsert(OperationBatch batch, long key, long encoded);

    /** Adds a delete of {@code key} to the batch. */
    void delete(OperationBatch batch, long key);

    /**
     * Whether the batch being filled may take its updates by position, on several threads at once: {@link
     * #encodeSerialized} may then run on several threads at once, and the upsert of a payload so encoded (not {@link
     * #isolated}) is {@link OperationBatch#setUpsert} of that value, a delete {@link OperationBatch#setDelete}, with
     * nothing for the store to note until {@link #sealBatch}. Asked before each batch.
     */
    default boolean takesUpdatesByPosition() {
        return false;
    }

    /**
     * Ends the batch being filled: what its updates need once it ran. The updates added from now on belong to the
     * next batch, which may be filled while this one runs (an {@link #isolated} update's batch must have been applied
     * before the next one is filled). Sealed batches are applied in the order they were sealed.
     */
    SealedUpdates sealBatch();

    /** The batch holding the updates since the last seal ran: frees what they superseded. */
    default void batchApplied(BatchResults results) {
        sealBatch().applied(results);
    }

    /** The updates of one sealed batch; see {@link #sealBatch()}. */
    interface SealedUpdates {
        /** Their batch ran with these results: frees what they superseded. Once, on the store's thread. */
        void applied(BatchResults results);
    }

    /**
     * The payload a key's stored value stands for, a fresh copy.
     *
     * @throws IOException where the stored bytes do not deserialize; the message names the key and the cause
     */
    P payload(long stored, long key) throws IOException;

    /**
     * A reader of stored payloads for one thread, with its own buffers and serializer. Readers of one store may read
     * at the same time, while nothing is stored in it or freed.
     */
    Reader<P> reader();

    /** Reads stored payloads; see {@link #reader()}. */
    interface Reader<P> {
        /**
         * The payload a key's stored value stands for, a fresh copy.
         *
         * @throws IOException where the stored bytes do not deserialize; the message names the key and the cause
         */
        P payload(long stored, long key) throws IOException;
    }

    /** Writes a key's payload as its serializer wrote it: an {@code int} length, then the bytes. */
    void writePayload(long stored, long key, DataOutputView out) throws IOException;

    /**
     * Stores a payload's serialized bytes, as {@link #writePayload} wrote them, for a key being restored (no
     * batch: the caller builds the index from what this returns).
     *
     * @return the value to store for the key in the index
     * @throws IOException where the bytes do not fit the store (an inline payload of another length)
     */
    long restore(long key, byte[] bytes, int offset, int length) throws IOException;

    /** Live payload rows, or -1 where payloads are inline. */
    int liveRows();

    /** Heap held for the payloads outside the index. */
    long heapBytes();
}
