package io.flix.flink;

import java.util.Objects;

/** A test update: a key and a payload, or a delete where the payload is null. */
public class Update {
    public long key;
    public String payload;

    public Update() {
    }

    public Update(long key, String payload) {
        this.key = key;
        this.payload = payload;
    }

    public static Update upsert(long key, String payload) {
        return new Update(key, payload);
    }

    public static Update delete(long key) {
        return new Update(key, null);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Update u && key == u.key && Objects.equals(payload, u.payload);
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, payload);
    }

    @Override
    public String toString() {
        return "Update{" + key + "=" + payload + '}';
    }
}
