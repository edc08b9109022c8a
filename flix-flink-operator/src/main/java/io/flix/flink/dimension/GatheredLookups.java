package io.flix.flink.dimension;

import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Lookups of an index that runs one call at a time (the GPU backend), gathered: the lookup batches of the threads
 * (operator subtasks, SQL lookup subtasks) that arrive while a call runs are answered together by the next call, one
 * index call per lookup kind. The GPU answers 10^5 keys in about the time it takes for one, so gathering turns the
 * callers' waiting into throughput.
 *
 * <p>No thread of its own: the first caller to find no call running does the call, for every batch queued by then
 * (its own included), then wakes the others; a caller whose batch was not taken becomes the next caller. All callers
 * hold the {@link LocalDimension}'s shared lock meanwhile, so every batch of one call sees the same dimension.
 */
final class GatheredLookups implements IndexLookups {

    private enum Kind { GET, FLOOR, CEILING, RANGE }

    /** One caller's batch. */
    private static final class Request {
        final Kind kind;
        final long[] keys;
        final long[] ends;
        final int n;
        final int limit;
        final long[] keysOut;
        final long[] valuesOut;
        RangeResult ranges;
        /** Keys in the index call that answered this batch. */
        int gathered;
        boolean done;
        Throwable failure;

        Request(Kind kind, long[] keys, long[] ends, int n, int limit, long[] keysOut, long[] valuesOut) {
            this.kind = kind;
            this.keys = keys;
            this.ends = ends;
            this.n = n;
            this.limit = limit;
            this.keysOut = keysOut;
            this.valuesOut = valuesOut;
        }
    }

    private final FlixIndex index;
    private final Object lock = new Object();
    private List<Request> queued = new ArrayList<>();
    private boolean running;
    /** Keys in the last index call a batch of this thread went into; see {@link #lastGathered()}. */
    private final ThreadLocal<int[]> lastGathered = ThreadLocal.withInitial(() -> new int[1]);

    GatheredLookups(FlixIndex index) {
        this.index = index;
    }

    @Override
    public void get(long[] keys, int n, long[] valuesOut) {
        call(new Request(Kind.GET, keys, null, n, 0, null, valuesOut));
    }

    @Override
    public void floor(long[] keys, int n, long[] keysOut, long[] valuesOut) {
        call(new Request(Kind.FLOOR, keys, null, n, 0, keysOut, valuesOut));
    }

    @Override
    public void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut) {
        call(new Request(Kind.CEILING, keys, null, n, 0, keysOut, valuesOut));
    }

    @Override
    public RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        final Request request = new Request(Kind.RANGE, lo, hi, n, limitPerRange, null, null);
        call(request);
        return request.ranges;
    }

    @Override
    public int lastGathered() {
        return lastGathered.get()[0];
    }

    private void call(Request request) {
        final List<Request> batch;
        synchronized (lock) {
            queued.add(request);
            while (running && !request.done) {
                try {
                    lock.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while waiting for a gathered index call", e);
                }
            }
            if (!request.done) {
                running = true;
                batch = queued;
                queued = new ArrayList<>();
            } else {
                batch = null;
            }
        }
        if (batch != null) {
            try {
                answer(batch);
            } catch (Throwable t) {
                for (Request r : batch) {
                    r.failure = t;
                }
            } finally {
                synchronized (lock) {
                    for (Request r : batch) {
                        r.done = true;
                    }
                    running = false;
                    lock.notifyAll();
                }
            }
        }
        lastGathered.get()[0] = request.gathered;
        if (request.failure != null) {
            if (request.failure instanceof RuntimeException e) {
                throw e;
            }
            if (request.failure instanceof Error e) {
                throw e;
            }
            throw new IllegalStateException(request.failure);
        }
    }

    /** One index call per kind for the batches queued. */
    private void answer(List<Request> batch) {
        for (Kind kind : Kind.values()) {
            final List<Request> ofKind = new ArrayList<>();
            int total = 0;
            for (Request r : batch) {
                if (r.kind == kind) {
                    ofKind.add(r);
                    total += r.n;
                }
            }
            if (ofKind.isEmpty()) {
                continue;
            }
            if (ofKind.size() == 1) {
                answerAlone(ofKind.get(0));
                continue;
            }
            final long[] keys = new long[total];
            final long[] ends = kind == Kind.RANGE ? new long[total] : null;
            int at = 0;
            for (Request r : ofKind) {
                System.arraycopy(r.keys, 0, keys, at, r.n);
                if (ends != null) {
                    System.arraycopy(r.ends, 0, ends, at, r.n);
                }
                r.gathered = total;
                at += r.n;
            }
            if (kind == Kind.RANGE) {
                answerRanges(ofKind, keys, ends, total);
                continue;
            }
            final long[] values = new long[total];
            final long[] found = kind == Kind.GET ? null : new long[total];
            switch (kind) {
                case GET -> index.get(keys, total, values);
                case FLOOR -> index.floor(keys, total, found, values);
                default -> index.ceiling(keys, total, found, values);
            }
            at = 0;
            for (Request r : ofKind) {
                System.arraycopy(values, at, r.valuesOut, 0, r.n);
                if (found != null) {
                    System.arraycopy(found, at, r.keysOut, 0, r.n);
                }
                at += r.n;
            }
        }
    }

    private void answerAlone(Request r) {
        r.gathered = r.n;
        switch (r.kind) {
            case GET -> index.get(r.keys, r.n, r.valuesOut);
            case FLOOR -> index.floor(r.keys, r.n, r.keysOut, r.valuesOut);
            case CEILING -> index.ceiling(r.keys, r.n, r.keysOut, r.valuesOut);
            default -> r.ranges = index.range(r.keys, r.ends, r.n, r.limit);
        }
    }

    /** Ranges of several batches in one call (with the largest limit), each cut back to its own limit. */
    private void answerRanges(List<Request> ofKind, long[] lo, long[] hi, int total) {
        int limit = 1;
        for (Request r : ofKind) {
            limit = Math.max(limit, r.limit);
        }
        final RangeResult all = index.range(lo, hi, total, limit);
        int at = 0;
        for (Request r : ofKind) {
            final int[] offsets = new int[r.n + 1];
            int count = 0;
            for (int i = 0; i < r.n; i++) {
                count += Math.min(r.limit, all.count(at + i));
                offsets[i + 1] = count;
            }
            final long[] keys = new long[count];
            final long[] values = new long[count];
            for (int i = 0; i < r.n; i++) {
                final int from = all.offsets()[at + i];
                final int length = offsets[i + 1] - offsets[i];
                System.arraycopy(all.keys(), from, keys, offsets[i], length);
                System.arraycopy(all.values(), from, values, offsets[i], length);
            }
            r.ranges = new RangeResult(offsets, keys, values);
            at += r.n;
        }
    }

    /** Batches waiting for the next call; for tests. */
    int queued() {
        synchronized (lock) {
            return queued.size();
        }
    }

    @Override
    public String toString() {
        return "gathered lookups of " + index.backend() + " (" + Arrays.toString(Kind.values()) + ")";
    }
}
