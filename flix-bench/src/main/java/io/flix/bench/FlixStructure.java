package io.flix.bench;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;

import java.util.Locale;

/**
 * A {@link FlixIndex} driven through its host-array calls: a FliX index of either backend, or the GPU sorted-array
 * baseline (which meets the same contract). Times are end to end: host copies and checks included.
 */
final class FlixStructure implements OrderedStructure {

    private final String name;
    private final FlixIndex index;
    private final boolean hasNodes;
    /** The last range result, whose arrays the next range call reuses (a caller that runs ranges in a loop would). */
    private RangeResult lastRange;

    FlixStructure(FlixConfig config) {
        this("flix", FlixIndex.open(config), true);
    }

    /** {@code hasNodes}: whether the index has nodes to count and restructure (FliX), or not (a sorted array). */
    FlixStructure(String name, FlixIndex index, boolean hasNodes) {
        this.name = name;
        this.index = index;
        this.hasNodes = hasNodes;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String backend() {
        return index.backend().name().toLowerCase(Locale.ROOT);
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
        lastRange = index.range(lo, hi, n, limitPerRange, lastRange);
        return lastRange;
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
        return hasNodes ? index.restructure() : -1;
    }

    @Override
    public long nodes() {
        return hasNodes ? index.stats().nodes() : -1;
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
