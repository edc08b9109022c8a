package io.flix.index.batch;

import io.flix.index.Backend;
import io.flix.index.FlixIndex;
import io.flix.index.IndexStats;
import io.flix.index.RangeResult;

/** Delegates to another index and counts the bulk calls made, and those made without the sorted promise. */
final class CountingIndex implements FlixIndex {

    private final FlixIndex delegate;
    int builds;
    int upserts;
    int deletes;
    int gets;
    int ceilings;
    int floors;
    int ranges;
    /** Calls of a kind that takes keysSorted, made with keysSorted = false. */
    int unsortedCalls;
    /** Calls with n == 0. */
    int emptyCalls;
    /** Keys asked by get, ceiling and floor calls, ranges asked, and the largest range limit asked. */
    long getKeys;
    long ceilingKeys;
    long floorKeys;
    long rangesAsked;
    int largestRangeLimit;

    CountingIndex(FlixIndex delegate) {
        this.delegate = delegate;
    }

    void reset() {
        builds = upserts = deletes = gets = ceilings = floors = ranges = unsortedCalls = emptyCalls = 0;
        getKeys = ceilingKeys = floorKeys = rangesAsked = largestRangeLimit = 0;
    }

    int total() {
        return builds + upserts + deletes + gets + ceilings + floors + ranges;
    }

    @Override
    public void build(long[] keys, long[] values, int n, boolean keysSorted) {
        builds++;
        note(n, keysSorted);
        delegate.build(keys, values, n, keysSorted);
    }

    @Override
    public void upsert(long[] keys, long[] values, int n, boolean keysSorted) {
        upserts++;
        note(n, keysSorted);
        delegate.upsert(keys, values, n, keysSorted);
    }

    @Override
    public void delete(long[] keys, int n, boolean keysSorted) {
        deletes++;
        note(n, keysSorted);
        delegate.delete(keys, n, keysSorted);
    }

    @Override
    public void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        gets++;
        getKeys += n;
        note(n, keysSorted);
        delegate.get(keys, n, valuesOut, keysSorted);
    }

    @Override
    public void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        ceilings++;
        ceilingKeys += n;
        note(n, keysSorted);
        delegate.ceiling(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    public void floor(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        floors++;
        floorKeys += n;
        note(n, keysSorted);
        delegate.floor(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    public RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        ranges++;
        rangesAsked += n;
        largestRangeLimit = Math.max(largestRangeLimit, limitPerRange);
        note(n, true);
        return delegate.range(lo, hi, n, limitPerRange);
    }

    @Override
    public long restructure() {
        return delegate.restructure();
    }

    @Override
    public int exportFrom(long fromKey, long[] keysOut, long[] valuesOut) {
        return delegate.exportFrom(fromKey, keysOut, valuesOut);
    }

    @Override
    public int exportAfter(long afterKey, long[] keysOut, long[] valuesOut) {
        return delegate.exportAfter(afterKey, keysOut, valuesOut);
    }

    @Override
    public long size() {
        return delegate.size();
    }

    @Override
    public IndexStats stats() {
        return delegate.stats();
    }

    @Override
    public Backend backend() {
        return delegate.backend();
    }

    @Override
    public void close() {
        delegate.close();
    }

    private void note(int n, boolean keysSorted) {
        if (!keysSorted) {
            unsortedCalls++;
        }
        if (n == 0) {
            emptyCalls++;
        }
    }
}
