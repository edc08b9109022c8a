package io.flix.bench;

import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Supplier;
import java.util.stream.IntStream;

/**
 * A JDK sorted map applying each batch one key at a time: TreeMap on the calling thread, ConcurrentSkipListMap
 * split over the common pool's threads (it is built for concurrent use, so it gets the same cores FliX gets).
 */
final class SortedMapStructure implements OrderedStructure {

    private static final int CHUNK = 1 << 14;

    private final String name;
    private final Supplier<NavigableMap<Long, Long>> factory;
    private final boolean concurrent;
    private NavigableMap<Long, Long> map;

    private SortedMapStructure(String name, Supplier<NavigableMap<Long, Long>> factory, boolean concurrent) {
        this.name = name;
        this.factory = factory;
        this.concurrent = concurrent;
        this.map = factory.get();
    }

    static SortedMapStructure treeMap() {
        return new SortedMapStructure("TreeMap", TreeMap::new, false);
    }

    static SortedMapStructure concurrentSkipListMap() {
        return new SortedMapStructure("ConcurrentSkipListMap", ConcurrentSkipListMap::new, true);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String backend() {
        return "cpu";
    }

    @Override
    public void build(long[] keys, long[] values, int n) {
        map = factory.get();
        upsert(keys, values, n);
    }

    @Override
    public void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        forEachChunk(n, (from, to) -> {
            for (int i = from; i < to; i++) {
                final Long v = map.get(keys[i]);
                valuesOut[i] = v == null ? Long.MIN_VALUE : v;
            }
        });
    }

    @Override
    public void upsert(long[] keys, long[] values, int n) {
        forEachChunk(n, (from, to) -> {
            for (int i = from; i < to; i++) {
                map.put(keys[i], values[i]);
            }
        });
    }

    @Override
    public void delete(long[] keys, int n) {
        forEachChunk(n, (from, to) -> {
            for (int i = from; i < to; i++) {
                map.remove(keys[i]);
            }
        });
    }

    @Override
    public long size() {
        return map.size();
    }

    @Override
    public long bytes() {
        return -1;
    }

    @Override
    public void close() {
        map = factory.get();
    }

    private interface ChunkBody {
        void run(int from, int to);
    }

    private void forEachChunk(int n, ChunkBody body) {
        if (!concurrent) {
            body.run(0, n);
            return;
        }
        final int chunks = (n + CHUNK - 1) / CHUNK;
        IntStream.range(0, chunks).parallel().forEach(c -> body.run(c * CHUNK, Math.min(n, (c + 1) * CHUNK)));
    }
}
