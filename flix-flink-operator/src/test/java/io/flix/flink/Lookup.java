package io.flix.flink;

/** A test lookup event: an id, the key looked up, and the end of its range for range lookups. */
public class Lookup {
    public long id;
    public long key;
    public long hi;

    public Lookup() {
    }

    public Lookup(long id, long key, long hi) {
        this.id = id;
        this.key = key;
        this.hi = hi;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Lookup l && id == l.id && key == l.key && hi == l.hi;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(id) * 31 + Long.hashCode(key);
    }

    @Override
    public String toString() {
        return "Lookup{" + id + ": " + key + (hi != key ? ".." + hi : "") + '}';
    }
}
