package io.flix.bench;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;

/** A FliX index of either backend. */
final class FlixStructure implements OrderedStructure {

    private final FlixIndex index;

    FlixStructure(FlixConfig config) {
        this.index = FlixIndex.open(config);
    }

    @Override
    public String name() {
        return "flix";
    }

    @Override
    public String backend() {
        return index.backend().name().toLowerCase(java.util.Locale.ROOT);
    }

    @Override
    public void build(long[] keys, long[] values, int n) {
        index.build(keys, values, n);
    }

    @Override
    public void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        index.get(keys, n, valuesOut, keysSorted);
    }

    @Override
    public void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        index.ceiling(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    public RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        return index.range(lo, hi, n, limitPerRange);
    }

    @Override
    public void upsert(long[] keys, long[] values, int n) {
        index.upsert(keys, values, n);
    }

    @Override
    public void delete(long[] keys, int n) {
        index.delete(keys, n);
    }

    @Override
    public long restructure() {
        return index.restructure();
    }

    @Override
    public long nodes() {
        return index.stats().nodes();
    }

    @Override
    public long size() {
        return index.size();
    }

    @Override
    public long bytes() {
        return index.stats().bytes();
    }

    @Override
    public void close() {
        index.close();
    }
}
