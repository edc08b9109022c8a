package io.flix.flink.shared;

import java.util.Arrays;

/**
 * An update as the shared dimension's writers receive it: the index key and the payload as the payload serializer
 * wrote it, or {@code null} for a delete. Encoded once, before the update stream is broadcast, so that every task
 * manager applies the same bytes and an update that cannot be encoded is rejected once. A POJO (Flink's
 * PojoSerializer, no Kryo).
 */
public final class EncodedUpdate {

    public long key;
    /** The serialized payload; null deletes the key. */
    public byte[] payload;

    public EncodedUpdate() {
    }

    public EncodedUpdate(long key, byte[] payload) {
        this.key = key;
        this.payload = payload;
    }

    public boolean isDelete() {
        return payload == null;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EncodedUpdate u && u.key == key && Arrays.equals(u.payload, payload);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(key) * 31 + Arrays.hashCode(payload);
    }

    @Override
    public String toString() {
        return payload == null ? "delete " + key : "upsert " + key + " (" + payload.length + " bytes)";
    }
}
