package io.flix.flink;

import java.util.Objects;

/** One stored key and its payload, as found by a range lookup. A Flink POJO. */
public final class Match<P> {

    public long key;
    public P payload;

    public Match() {
    }

    public Match(long key, P payload) {
        this.key = key;
        this.payload = payload;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Match<?> m && key == m.key && Objects.equals(payload, m.payload);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(key) * 31 + Objects.hashCode(payload);
    }

    @Override
    public String toString() {
        return key + "=" + payload;
    }
}
