package io.flix.index;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A replica for tests of {@link MirroredIndex}: a {@link TreeMapOracle} (each call alone) that records the threads
 * whose lookups it answered and the updates it applied, reports a given backend and device, and can be told to
 * fail its next update halfway through (as a device fault would leave a replica).
 */
final class RecordingReplica implements FlixIndex {

    private final TreeMapOracle map = new TreeMapOracle();
    private final Backend backend;
    private final int device;
    final Set<String> lookupThreads = ConcurrentHashMap.newKeySet();
    final AtomicInteger updates = new AtomicInteger();
    private volatile boolean failNextUpdate;
    private volatile boolean closed;

    RecordingReplica(Backend backend, int device) {
        this.backend = backend;
        this.device = device;
    }

    /** The next upsert or delete applies half its batch, then throws. */
    void failNextUpdate() {
        failNextUpdate = true;
    }

    boolean isClosed() {
        return closed;
    }

    synchronized List<Long> keys() {
        return Collections.unmodifiableList(new ArrayList<>(map.contents().keySet()));
    }

    synchronized TreeMapOracle contents() {
        return map;
    }

    private void lookedUp() {
        lookupThreads.add(Thread.currentThread().getName());
    }

    @Override
    public synchronized void build(long[] keys, long[] values, int n, boolean keysSorted) {
        updates.incrementAndGet();
        map.build(keys, values, n, keysSorted);
    }

    @Override
    public synchronized void upsert(long[] keys, long[] values, int n, boolean keysSorted) {
        updates.incrementAndGet();
        if (failNextUpdate) {
            failNextUpdate = false;
            map.upsert(keys, values, n / 2, keysSorted);
            throw new IllegalStateException("device " + device + " faulted halfway through an upsert");
        }
        map.upsert(keys, values, n, keysSorted);
    }

    @Override
    public synchronized void delete(long[] keys, int n, boolean keysSorted) {
        updates.incrementAndGet();
        if (failNextUpdate) {
            failNextUpdate = false;
            map.delete(keys, n / 2, keysSorted);
            throw new IllegalStateException("device " + device + " faulted halfway through a delete");
        }
        map.delete(keys, n, keysSorted);
    }

    @Override
    public synchronized void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        lookedUp();
        map.get(keys, n, valuesOut, keysSorted);
    }

    @Override
    public synchronized void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        lookedUp();
        map.ceiling(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    public synchronized void floor(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        lookedUp();
        map.floor(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    public synchronized RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        lookedUp();
        return map.range(lo, hi, n, limitPerRange);
    }

    @Override
    public synchronized long restructure() {
        updates.incrementAndGet();
        return map.restructure();
    }

    @Override
    public synchronized int exportFrom(long fromKey, long[] keysOut, long[] valuesOut) {
        lookedUp();
        return map.exportFrom(fromKey, keysOut, valuesOut);
    }

    @Override
    public synchronized int exportAfter(long afterKey, long[] keysOut, long[] valuesOut) {
        lookedUp();
        return map.exportAfter(afterKey, keysOut, valuesOut);
    }

    @Override
    public synchronized long size() {
        return map.size();
    }

    @Override
    public synchronized IndexStats stats() {
        final IndexStats s = map.stats();
        return new IndexStats(backend, s.size(), device, 0, 0, 0, 0, 1000L + device);
    }

    @Override
    public Backend backend() {
        return backend;
    }

    @Override
    public int device() {
        return device;
    }

    @Override
    public synchronized void close() {
        closed = true;
        map.close();
    }
}
