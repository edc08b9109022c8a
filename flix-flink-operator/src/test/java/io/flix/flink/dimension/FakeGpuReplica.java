package io.flix.flink.dimension;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.IndexStats;
import io.flix.index.RangeResult;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A CPU index that says it is on the GPU, on a given device, so that a dimension gathers its lookups as on a GPU; it
 * records the keys each of its lookup calls asked and the updates it applied.
 */
final class FakeGpuReplica implements FlixIndex {

    private final FlixIndex cpu = FlixIndex.open(FlixConfig.builder().backend(Backend.CPU).threads(1).build());
    private final int device;
    /** Every key a lookup call asked this replica. */
    final Set<Long> keysAsked = ConcurrentHashMap.newKeySet();
    final AtomicInteger lookupCalls = new AtomicInteger();
    final AtomicInteger updates = new AtomicInteger();

    FakeGpuReplica(int device) {
        this.device = device;
    }

    private void asked(long[] keys, int n) {
        lookupCalls.incrementAndGet();
        for (int i = 0; i < n; i++) {
            keysAsked.add(keys[i]);
        }
    }

    @Override
    public void build(long[] keys, long[] values, int n, boolean keysSorted) {
        updates.incrementAndGet();
        cpu.build(keys, values, n, keysSorted);
    }

    @Override
    public void upsert(long[] keys, long[] values, int n, boolean keysSorted) {
        updates.incrementAndGet();
        cpu.upsert(keys, values, n, keysSorted);
    }

    @Override
    public void delete(long[] keys, int n, boolean keysSorted) {
        updates.incrementAndGet();
        cpu.delete(keys, n, keysSorted);
    }

    @Override
    public void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        asked(keys, n);
        cpu.get(keys, n, valuesOut, keysSorted);
    }

    @Override
    public void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        asked(keys, n);
        cpu.ceiling(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    public void floor(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        asked(keys, n);
        cpu.floor(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    public RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        asked(lo, n);
        return cpu.range(lo, hi, n, limitPerRange);
    }

    @Override
    public long restructure() {
        updates.incrementAndGet();
        return cpu.restructure();
    }

    @Override
    public int exportFrom(long fromKey, long[] keysOut, long[] valuesOut) {
        return cpu.exportFrom(fromKey, keysOut, valuesOut);
    }

    @Override
    public int exportAfter(long afterKey, long[] keysOut, long[] valuesOut) {
        return cpu.exportAfter(afterKey, keysOut, valuesOut);
    }

    @Override
    public long size() {
        return cpu.size();
    }

    @Override
    public IndexStats stats() {
        final IndexStats s = cpu.stats();
        return new IndexStats(Backend.GPU, s.size(), s.buckets(), s.nodes(), s.freeNodes(), s.nodeSize(),
                s.longestChain(), s.bytes());
    }

    @Override
    public Backend backend() {
        return Backend.GPU;
    }

    @Override
    public int device() {
        return device;
    }

    @Override
    public void close() {
        cpu.close();
    }
}
