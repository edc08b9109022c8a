package io.flix.bench;

import io.flix.index.RangeResult;

import java.lang.management.ManagementFactory;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.function.Supplier;
import java.util.stream.IntStream;

/**
 * A JDK sorted map applying each batch one key at a time: TreeMap on the calling thread, ConcurrentSkipListMap
 * split over the common pool's threads (it is built for concurrent use, so it gets the same cores FliX gets).
 *
 * <p>Their memory is modelled, not measured (a heap walk per round would cost more than the round): objects per
 * key times HotSpot object sizes. TreeMap: an entry (header, key, value, left, right, parent, colour) and two
 * boxed {@code Long}s. ConcurrentSkipListMap: a node (header, key, value, next), two {@code Long}s and on average
 * 1/3 index node (header, node, down, right) with its level probability 1/4.
 */
final class SortedMapStructure implements OrderedStructure {

    private static final int CHUNK = 1 << 14;
    private static final boolean COMPRESSED_OOPS = compressedOops();
    private static final int REF = COMPRESSED_OOPS ? 4 : 8;
    private static final int HEADER = 12;
    private static final int LONG_BOX = align(HEADER + 8);
    private static final double TREE_MAP_BYTES_PER_KEY = align(HEADER + 5 * REF + 1) + 2 * LONG_BOX;
    private static final double SKIP_LIST_BYTES_PER_KEY =
            align(HEADER + 3 * REF) + 2 * LONG_BOX + align(HEADER + 3 * REF) / 3.0;

    private final String name;
    private final Supplier<NavigableMap<Long, Long>> factory;
    private final boolean concurrent;
    private final double bytesPerKey;
    private NavigableMap<Long, Long> map;

    private SortedMapStructure(String name, Supplier<NavigableMap<Long, Long>> factory, boolean concurrent,
                               double bytesPerKey) {
        this.name = name;
        this.factory = factory;
        this.concurrent = concurrent;
        this.bytesPerKey = bytesPerKey;
        this.map = factory.get();
    }

    static SortedMapStructure treeMap() {
        return new SortedMapStructure("TreeMap", TreeMap::new, false, TREE_MAP_BYTES_PER_KEY);
    }

    static SortedMapStructure concurrentSkipListMap() {
        return new SortedMapStructure("ConcurrentSkipListMap", ConcurrentSkipListMap::new, true,
                SKIP_LIST_BYTES_PER_KEY);
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
    public void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        forEachChunk(n, (from, to) -> {
            for (int i = from; i < to; i++) {
                final Map.Entry<Long, Long> e = map.ceilingEntry(keys[i]);
                keysOut[i] = e == null ? 0 : e.getKey();
                valuesOut[i] = e == null ? Long.MIN_VALUE : e.getValue();
            }
        });
    }

    @Override
    public RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        // each range fills its own slice of limitPerRange slots, then the slices are packed into CSR form
        final long[] slotKeys = new long[n * limitPerRange];
        final long[] slotValues = new long[n * limitPerRange];
        final int[] counts = new int[n];
        forEachChunk(n, (from, to) -> {
            for (int i = from; i < to; i++) {
                int c = 0;
                final int base = i * limitPerRange;
                for (Map.Entry<Long, Long> e : map.subMap(lo[i], true, hi[i], true).entrySet()) {
                    slotKeys[base + c] = e.getKey();
                    slotValues[base + c] = e.getValue();
                    if (++c == limitPerRange) {
                        break;
                    }
                }
                counts[i] = c;
            }
        });
        final int[] offsets = new int[n + 1];
        for (int i = 0; i < n; i++) {
            offsets[i + 1] = offsets[i] + counts[i];
        }
        final long[] keys = new long[offsets[n]];
        final long[] values = new long[offsets[n]];
        for (int i = 0; i < n; i++) {
            System.arraycopy(slotKeys, i * limitPerRange, keys, offsets[i], counts[i]);
            System.arraycopy(slotValues, i * limitPerRange, values, offsets[i], counts[i]);
        }
        return new RangeResult(offsets, keys, values);
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
        return Math.round(map.size() * bytesPerKey);
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

    private static int align(int bytes) {
        return (bytes + 7) & ~7;
    }

    private static boolean compressedOops() {
        try {
            final com.sun.management.HotSpotDiagnosticMXBean hotSpot =
                    ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
            return Boolean.parseBoolean(hotSpot.getVMOption("UseCompressedOops").getValue());
        } catch (RuntimeException e) {
            return true; // the default below 32 GiB of heap
        }
    }
}
