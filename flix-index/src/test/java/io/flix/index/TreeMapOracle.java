package io.flix.index;

import java.util.Map;
import java.util.TreeMap;

/**
 * The sorted-map oracle: the index contract executed one operation at a time on a {@link TreeMap}. Tests compare
 * every backend and the micro-batch engine against it.
 */
public final class TreeMapOracle implements FlixIndex {

    private final TreeMap<Long, Long> map = new TreeMap<>();
    private boolean closed;

    @Override
    public void build(long[] keys, long[] values, int n, boolean keysSorted) {
        open();
        BatchArgs.checkPairs(keys, values, n, keysSorted);
        map.clear();
        for (int i = 0; i < n; i++) {
            map.put(keys[i], values[i]);
        }
    }

    @Override
    public void upsert(long[] keys, long[] values, int n, boolean keysSorted) {
        open();
        BatchArgs.checkPairs(keys, values, n, keysSorted);
        for (int i = 0; i < n; i++) {
            map.put(keys[i], values[i]);
        }
    }

    @Override
    public void delete(long[] keys, int n, boolean keysSorted) {
        open();
        BatchArgs.checkKeys(keys, n, keysSorted);
        for (int i = 0; i < n; i++) {
            map.remove(keys[i]);
        }
    }

    @Override
    public void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        open();
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkArray(valuesOut, "valuesOut", n);
        for (int i = 0; i < n; i++) {
            valuesOut[i] = get(keys[i]);
        }
    }

    @Override
    public void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        open();
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkAnswerArrays(keysOut, valuesOut, n);
        for (int i = 0; i < n; i++) {
            write(map.ceilingEntry(keys[i]), keysOut, valuesOut, i);
        }
    }

    @Override
    public void floor(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        open();
        BatchArgs.checkKeys(keys, n, keysSorted);
        BatchArgs.checkAnswerArrays(keysOut, valuesOut, n);
        for (int i = 0; i < n; i++) {
            write(map.floorEntry(keys[i]), keysOut, valuesOut, i);
        }
    }

    @Override
    public RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        open();
        BatchArgs.checkRanges(lo, hi, n, limitPerRange);
        final int[] offsets = new int[n + 1];
        int total = 0;
        for (int i = 0; i < n; i++) {
            total += (int) Math.min(limitPerRange, map.subMap(lo[i], true, hi[i], true).size());
            offsets[i + 1] = total;
        }
        final long[] keys = new long[total];
        final long[] values = new long[total];
        for (int i = 0; i < n; i++) {
            int at = offsets[i];
            for (Map.Entry<Long, Long> e : map.subMap(lo[i], true, hi[i], true).entrySet()) {
                if (at == offsets[i + 1]) {
                    break;
                }
                keys[at] = e.getKey();
                values[at] = e.getValue();
                at++;
            }
        }
        return new RangeResult(offsets, keys, values);
    }

    @Override
    public long restructure() {
        open();
        return 0;
    }

    @Override
    public int exportFrom(long fromKey, long[] keysOut, long[] valuesOut) {
        open();
        BatchArgs.checkExport(keysOut, valuesOut);
        int at = 0;
        for (Map.Entry<Long, Long> e : map.tailMap(fromKey, true).entrySet()) {
            if (at == keysOut.length) {
                break;
            }
            keysOut[at] = e.getKey();
            valuesOut[at] = e.getValue();
            at++;
        }
        return at;
    }

    @Override
    public int exportAfter(long afterKey, long[] keysOut, long[] valuesOut) {
        open();
        BatchArgs.checkExport(keysOut, valuesOut);
        int at = 0;
        for (Map.Entry<Long, Long> e : map.tailMap(afterKey, false).entrySet()) {
            if (at == keysOut.length) {
                break;
            }
            keysOut[at] = e.getKey();
            valuesOut[at] = e.getValue();
            at++;
        }
        return at;
    }

    /** The value of one key, {@link #NOT_FOUND} where absent. */
    public long get(long key) {
        final Long v = map.get(key);
        return v == null ? NOT_FOUND : v;
    }

    /** A copy of the contents. */
    public TreeMap<Long, Long> contents() {
        return new TreeMap<>(map);
    }

    @Override
    public long size() {
        open();
        return map.size();
    }

    @Override
    public IndexStats stats() {
        open();
        return new IndexStats(Backend.CPU, map.size(), 0, 0, 0, 0, 0, 0);
    }

    @Override
    public Backend backend() {
        return Backend.CPU;
    }

    @Override
    public void close() {
        closed = true;
    }

    private void open() {
        if (closed) {
            throw new IllegalStateException("index is closed");
        }
    }

    private static void write(Map.Entry<Long, Long> e, long[] keysOut, long[] valuesOut, int i) {
        if (e == null) {
            keysOut[i] = 0;
            valuesOut[i] = NOT_FOUND;
        } else {
            keysOut[i] = e.getKey();
            valuesOut[i] = e.getValue();
        }
    }
}
