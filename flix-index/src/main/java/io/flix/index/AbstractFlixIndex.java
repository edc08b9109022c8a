package io.flix.index;

import java.util.concurrent.locks.Lock;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The part of the {@link FlixIndex} contract that is the same for every backend: concurrency and closing. Each
 * public call takes a fair read-write lock, checks that the index is open and calls the backend's
 * {@code ...Locked} method: lookups share the lock where the backend can run them in parallel (else they take it
 * alone, as updates do); updates and {@code close} take it alone. So a backend implements each operation for one
 * caller at a time against a structure that no update changes meanwhile, and never sees a call after close.
 * Paging ({@link #exportAfter}) and the whole export ({@link #export()}, one lock for its size and its copy) are
 * implemented here once.
 *
 * <p>A backend's own extra calls take the same lock through {@link #enterLookup()} and {@link #enterUpdate()}.
 */
public abstract class AbstractFlixIndex implements FlixIndex {

    private final Backend backend;
    /** Fair: waiting calls are served in arrival order, so neither lookups nor updates can starve the other. */
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock(true);
    private final Lock lookupLock;
    /** Written under the exclusive lock, read under either. */
    private boolean closed;

    /**
     * @param backend         what {@link #backend()} answers
     * @param parallelLookups whether lookups may run at the same time (they then share the lock, so the backend's
     *                        lookups must neither change the index nor share scratch); else they run one at a time
     */
    protected AbstractFlixIndex(Backend backend, boolean parallelLookups) {
        if (backend == null || backend == Backend.AUTO) {
            throw new IllegalArgumentException("backend must name the backend in use, was " + backend);
        }
        this.backend = backend;
        this.lookupLock = parallelLookups ? lock.readLock() : lock.writeLock();
    }

    // ------------------------------------------------------------------------------------------------ updates

    @Override
    public final void build(long[] keys, long[] values, int n, boolean keysSorted) {
        final Lock held = enterUpdate();
        try {
            buildLocked(keys, values, n, keysSorted);
        } finally {
            held.unlock();
        }
    }

    @Override
    public final void upsert(long[] keys, long[] values, int n, boolean keysSorted) {
        final Lock held = enterUpdate();
        try {
            upsertLocked(keys, values, n, keysSorted);
        } finally {
            held.unlock();
        }
    }

    @Override
    public final void delete(long[] keys, int n, boolean keysSorted) {
        final Lock held = enterUpdate();
        try {
            deleteLocked(keys, n, keysSorted);
        } finally {
            held.unlock();
        }
    }

    @Override
    public final long restructure() {
        final Lock held = enterUpdate();
        try {
            return restructureLocked();
        } finally {
            held.unlock();
        }
    }

    // ------------------------------------------------------------------------------------------------ lookups

    @Override
    public final void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        final Lock held = enterLookup();
        try {
            getLocked(keys, n, valuesOut, keysSorted);
        } finally {
            held.unlock();
        }
    }

    @Override
    public final void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        final Lock held = enterLookup();
        try {
            ceilingLocked(keys, n, keysOut, valuesOut, keysSorted);
        } finally {
            held.unlock();
        }
    }

    @Override
    public final void floor(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        final Lock held = enterLookup();
        try {
            floorLocked(keys, n, keysOut, valuesOut, keysSorted);
        } finally {
            held.unlock();
        }
    }

    @Override
    public final RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        final Lock held = enterLookup();
        try {
            return rangeLocked(lo, hi, n, limitPerRange);
        } finally {
            held.unlock();
        }
    }

    @Override
    public final RangeResult range(long[] lo, long[] hi, int n, int limitPerRange, RangeResult reuse) {
        final Lock held = enterLookup();
        try {
            return rangeLocked(lo, hi, n, limitPerRange, reuse);
        } finally {
            held.unlock();
        }
    }

    @Override
    public final int exportFrom(long fromKey, long[] keysOut, long[] valuesOut) {
        final Lock held = enterLookup();
        try {
            return exportFromLocked(fromKey, keysOut, valuesOut);
        } finally {
            held.unlock();
        }
    }

    /** The pairs after {@code afterKey}: those from {@code afterKey + 1}, none after {@code Long.MAX_VALUE}. */
    @Override
    public final int exportAfter(long afterKey, long[] keysOut, long[] valuesOut) {
        final Lock held = enterLookup();
        try {
            if (afterKey == Long.MAX_VALUE) {
                BatchArgs.checkExport(keysOut, valuesOut);
                return 0;
            }
            return exportFromLocked(afterKey + 1, keysOut, valuesOut);
        } finally {
            held.unlock();
        }
    }

    /** As {@link FlixIndex#export()}, its size and its copy under one lock: one state of the index. */
    @Override
    public final SortedPairs export() {
        final Lock held = enterLookup();
        try {
            return FlixIndex.super.export(); // its calls of size() and exportFrom() take the lock again
        } finally {
            held.unlock();
        }
    }

    @Override
    public final long size() {
        final Lock held = enterLookup();
        try {
            return sizeLocked();
        } finally {
            held.unlock();
        }
    }

    @Override
    public final IndexStats stats() {
        final Lock held = enterLookup();
        try {
            return statsLocked();
        } finally {
            held.unlock();
        }
    }

    @Override
    public final Backend backend() {
        final Lock held = enterLookup();
        held.unlock();
        return backend;
    }

    // ------------------------------------------------------------------------------------------------ closing

    /** Waits for the calls running, then releases everything ({@link #closeLocked()}) once. */
    @Override
    public final void close() {
        final Lock exclusive = lock.writeLock();
        exclusive.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            closeLocked();
        } finally {
            exclusive.unlock();
        }
    }

    /**
     * Takes the lock as a lookup does (shared, or alone where lookups run one at a time) and checks that the index
     * is open; the caller unlocks the returned lock in a {@code finally}.
     *
     * @throws IllegalStateException where the index is closed (nothing is left locked)
     */
    protected final Lock enterLookup() {
        return enter(lookupLock);
    }

    /** As {@link #enterLookup()}, alone: for calls that change the index. */
    protected final Lock enterUpdate() {
        return enter(lock.writeLock());
    }

    private Lock enter(Lock l) {
        l.lock();
        if (closed) {
            l.unlock();
            throw new IllegalStateException("index is closed");
        }
        return l;
    }

    // ------------------------------------------------------------------------------------------------ the backend

    // Each is called with the lock held and the index open; arguments are unchecked (each checks its own).

    protected abstract void buildLocked(long[] keys, long[] values, int n, boolean keysSorted);

    protected abstract void upsertLocked(long[] keys, long[] values, int n, boolean keysSorted);

    protected abstract void deleteLocked(long[] keys, int n, boolean keysSorted);

    protected abstract long restructureLocked();

    protected abstract void getLocked(long[] keys, int n, long[] valuesOut, boolean keysSorted);

    protected abstract void ceilingLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted);

    protected abstract void floorLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted);

    protected abstract RangeResult rangeLocked(long[] lo, long[] hi, int n, int limitPerRange);

    /** The range lookup into the arrays of {@code reuse} where the backend reuses them; by default, new arrays. */
    protected RangeResult rangeLocked(long[] lo, long[] hi, int n, int limitPerRange, RangeResult reuse) {
        return rangeLocked(lo, hi, n, limitPerRange);
    }

    protected abstract int exportFromLocked(long fromKey, long[] keysOut, long[] valuesOut);

    protected abstract long sizeLocked();

    protected abstract IndexStats statsLocked();

    /** Releases everything the index holds; called once, alone, after every other call has returned. */
    protected abstract void closeLocked();
}
