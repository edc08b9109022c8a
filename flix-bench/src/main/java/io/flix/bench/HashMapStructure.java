package io.flix.bench;

import it.unimi.dsi.fastutil.longs.Long2LongOpenHashMap;

/**
 * fastutil's open-addressing primitive {@code long -> long} hash map (linear probing, deletions shift entries back
 * rather than leaving tombstones), one key at a time on the calling thread. Unordered: point lookups only.
 */
final class HashMapStructure implements OrderedStructure {

    /** Exposes the table length (a protected field) so that memory is counted, not guessed. */
    private static final class SizedMap extends Long2LongOpenHashMap {
        SizedMap(int expected) {
            super(expected);
            defaultReturnValue(Long.MIN_VALUE);
        }

        long tableBytes() {
            return 2L * Long.BYTES * key.length; // key[] and value[] (each capacity + 1 slots)
        }
    }

    private SizedMap map = new SizedMap(16);

    @Override
    public String name() {
        return "Long2LongOpenHashMap";
    }

    @Override
    public String backend() {
        return "cpu";
    }

    @Override
    public boolean ordered() {
        return false;
    }

    @Override
    public void build(long[] keys, long[] values, int n) {
        map = new SizedMap(n);
        upsert(keys, values, n);
    }

    @Override
    public void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        final SizedMap m = map;
        for (int i = 0; i < n; i++) {
            valuesOut[i] = m.get(keys[i]);
        }
    }

    @Override
    public void upsert(long[] keys, long[] values, int n) {
        final SizedMap m = map;
        for (int i = 0; i < n; i++) {
            m.put(keys[i], values[i]);
        }
    }

    @Override
    public void delete(long[] keys, int n) {
        final SizedMap m = map;
        for (int i = 0; i < n; i++) {
            m.remove(keys[i]);
        }
    }

    @Override
    public long size() {
        return map.size();
    }

    @Override
    public long bytes() {
        return map.tableBytes();
    }

    @Override
    public void close() {
        map = new SizedMap(16);
    }
}
