package io.flix.index.gpu;

import static io.flix.index.gpu.KernelContract.GET_EVENT_COMPUTED;
import static io.flix.index.gpu.KernelContract.GET_EVENT_UPLOADED;
import static io.flix.index.gpu.KernelContract.GET_SLOTS;
import static io.flix.index.gpu.KernelContract.GET_STREAM_COMPUTE;
import static io.flix.index.gpu.KernelContract.GET_STREAM_IN;
import static io.flix.index.gpu.KernelContract.GET_STREAM_LOOKUP_ALTERNATE;
import static io.flix.index.gpu.KernelContract.GET_STREAM_OUT;
import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.function.IntConsumer;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;

/**
 * Host arrays straight between the registered Java heap and the device ({@link HostArrayDma}, {@link
 * HeapRegistration}): no staging and no host copy, so a call moves its bytes once, at the bus's rate. Arrays go in
 * segments of at most {@link #SEGMENT_LONGS}, each copy holding its array still only while it runs; copies to the
 * device run on threads of their own, copies to the host on others, each way on a stream of the index's own. A
 * lookup runs as a pipeline of chunks: chunk k + 1 goes up while chunk k is looked up and chunk k - 1 comes back.
 *
 * <p>A download first waits, on its thread and before it holds its array, for the device work of its own part
 * (an event recorded after that work); then it only copies. So no copy ever waits for Java or for later work, and a
 * copy holding its array still always ends, whatever the other threads wait for.
 *
 * <p>A lookup (get, ceiling, floor) whose device work is one launch a chunk ({@link PipelinedLookup}) runs leaner: one
 * native call a window of {@link #LOOKUP_WINDOW_LONGS} issues every chunk's upload, launch and downloads, ordered by
 * events between the streams, and waits once ({@link HostArrayDma#lookupWindow}). No thread hand-over and no host
 * wait between chunks; the window bounds how long its arrays are held still. A lookup of up to {@link
 * #MAPPED_LOOKUP_MAX_LONGS} goes with no copy at all where the heap is mapped for the device ({@link
 * HostArrayDma#lookupMapped}): its one launch reads the queries from the heap and writes the answers into it, sparing
 * the chunks' copies their fixed costs (a copy each way costs several microseconds beyond its bytes).
 */
final class DirectCopies implements HostArrayCopies {

    /** Longs a copy moves at most (32 MiB, about 0.6 ms at the bus's rate): bounds how long it holds its array. */
    static final int SEGMENT_LONGS = 1 << 22;
    /** Pieces (of {@link PinnedPieces#PIECE_LONGS}) a lookup chunk holds at least: 2 MiB. */
    static final int MIN_PIECES_PER_CHUNK = 2;
    /** How long a wait for a copy spins before it parks ({@link #join}). */
    private static final long SPIN_NANOS = 200_000L;
    /**
     * How long a copy thread spins for the copy it goes after ({@link #uploadThenInBackground}): a segment's copy, 0.6
     * ms at the bus's rate, and some more.
     */
    private static final long AFTER_SPIN_NANOS = 1_000_000L;
    /** Parts whose downloads may wait at once, each for an event of its own. */
    private static final int READY_EVENTS = 32;
    /**
     * Longs a pipelined lookup issues in one native call, holding its arrays still until all of them are back: 128
     * MiB each, about 2.7 ms at the bus's rate (a collection that falls in that time waits).
     */
    static final int LOOKUP_WINDOW_LONGS = 1 << 24;
    /**
     * Chunks of a pipelined lookup: a {@link #LOOKUP_TARGET_CHUNKS}-th of its window, from 1 MiB to 2 MiB. Each chunk
     * costs the bus about 5 us beyond its bytes, and the host about 10 us of driver calls; a larger chunk delays the
     * pipeline's start and end.
     */
    static final int LOOKUP_TARGET_CHUNKS = 8;
    static final int LOOKUP_CHUNK_MIN_LONGS = 1 << 17;
    static final int LOOKUP_CHUNK_MAX_LONGS = 1 << 18;
    /**
     * Longs a lookup reads and writes in place at most: the device's loads and stores across the bus move both ways
     * at once slower than the copy engines do, which a larger batch's pipeline of copies makes up for.
     */
    static final int MAPPED_LOOKUP_MAX_LONGS = 1 << 17;

    private final GpuRuntime.DeviceContext device;
    private final DeviceStream compute;
    private final DeviceStream in;
    private final DeviceStream out;
    /** A pipelined lookup's every other chunk. */
    private final DeviceStream lookupAlternate;
    /** Recorded on the compute stream after part k's work, in ready[k % READY_EVENTS]. */
    private final CUevent[] ready = new CUevent[READY_EVENTS];
    /** A pipelined lookup's events: after each chunk's upload, after each chunk's lookup. */
    private final CUevent[] lookupEvents = new CUevent[2];
    /** A pipelined lookup's handles and arguments (its GET_ slots), refilled for every call. */
    private final long[] lookupArgs = new long[GET_SLOTS];
    /** Where a pipelined lookup's sort check comes back (in the low half). */
    private final long[] sortCheck = new long[1];
    /** Whether the last pipelined lookup read and wrote its arrays in place ({@link HostArrayDma#lookupMapped}). */
    private boolean lastLookupMapped;

    DirectCopies(GpuRuntime.DeviceContext device, DeviceStream compute) {
        this.device = device;
        this.compute = compute;
        // in, out, the alternate lookup stream
        final DeviceStream[] streams = new DeviceStream[3];
        try {
            for (int k = 0; k < streams.length; k++) {
                streams[k] = new DeviceStream();
            }
            for (int k = 0; k < READY_EVENTS; k++) {
                ready[k] = event();
            }
            for (int k = 0; k < lookupEvents.length; k++) {
                lookupEvents[k] = event();
            }
        } catch (RuntimeException e) {
            destroyEvents();
            for (DeviceStream made : streams) {
                if (made != null) {
                    made.close();
                }
            }
            throw e;
        }
        this.in = streams[0];
        this.out = streams[1];
        this.lookupAlternate = streams[2];
        lookupArgs[GET_STREAM_IN] = in.address();
        lookupArgs[GET_STREAM_COMPUTE] = compute.address();
        lookupArgs[GET_STREAM_OUT] = out.address();
        lookupArgs[GET_STREAM_LOOKUP_ALTERNATE] = lookupAlternate.address();
        lookupArgs[GET_EVENT_UPLOADED] = ((RawEvent) lookupEvents[0]).address();
        lookupArgs[GET_EVENT_COMPUTED] = ((RawEvent) lookupEvents[1]).address();
    }

    private static CUevent event() {
        final CUevent e = new RawEvent();
        cuEventCreate(e, CUevent_flags.CU_EVENT_DISABLE_TIMING);
        return e;
    }

    /** How a lookup batch of n longs is cut into chunks. */
    static ChunkPlan plan(int n) {
        return ChunkPlan.of(n, PinnedPieces.PIECE_LONGS, MIN_PIECES_PER_CHUNK, StagedCopies.MAX_PIECES_PER_CHUNK);
    }

    @Override
    public void uploadAll(long[][] srcs, int n, CUdeviceptr[] dsts) {
        try (Copies copies = new Copies(n <= SEGMENT_LONGS)) {
            for (int a = 0; a < srcs.length; a++) {
                copies.up(srcs[a], 0, n, dsts[a]);
            }
        }
    }

    @Override
    public boolean uploadsInBackground() {
        return true;
    }

    /**
     * The first array goes up on the calling thread where it is one segment, the second's copies are handed to the
     * copy threads before it and start once it has arrived: a thread woken while the first crosses starts the second
     * at once (a thread woken after it would leave the bus idle meanwhile). A larger first array goes up on the copy
     * threads, the second's copies handed over after it.
     */
    @Override
    public Arrival uploadThenInBackground(long[] first, CUdeviceptr firstDst, long[] then, CUdeviceptr thenDst,
                                          int n) {
        final boolean firstInline = n <= SEGMENT_LONGS;
        final CompletableFuture<Void> firstArrived = new CompletableFuture<>();
        final Copies copies = new Copies(false, firstInline ? firstArrived : null);
        try {
            if (firstInline) {
                copies.up(then, 0, n, thenDst);
                upload(first, n, firstDst);
            } else {
                upload(first, n, firstDst);
                copies.up(then, 0, n, thenDst);
            }
        } catch (RuntimeException | Error e) {
            firstArrived.complete(null);
            Waits.afterFailure(e, copies::close);
            throw e;
        }
        firstArrived.complete(null);
        // a part a segment: its copy's future
        return new Arrival() {
            @Override
            public void await() {
                copies.close();
            }

            @Override
            public int parts() {
                return copies.started.size();
            }

            @Override
            public long partEnd(int k, long count) {
                return Math.min(count, (k + 1L) * SEGMENT_LONGS);
            }

            @Override
            public void awaitPart(int k) {
                join(copies.started.get(k));
            }

            @Override
            public boolean partArrived(int k) {
                return copies.started.get(k).isDone();
            }
        };
    }

    @Override
    public void downloadAll(CUdeviceptr[] srcs, long[][] dsts, int n) {
        try (Copies copies = new Copies(n <= SEGMENT_LONGS)) {
            final CUevent done = copies.computed();
            for (int a = 0; a < srcs.length; a++) {
                copies.down(srcs[a], dsts[a], 0, n, done);
            }
        }
    }

    /** The copy runs on a copy thread, after the compute stream's work issued before this call. */
    @Override
    public Arrival downloadInBackground(CUdeviceptr src, long[] dst, int n) {
        final Copies copies = new Copies(false);
        try {
            copies.down(src, dst, 0, n, copies.computed());
        } catch (RuntimeException | Error e) {
            Waits.afterFailure(e, copies::close);
            throw e;
        }
        return copies::close;
    }

    @Override
    public void produceAndDownload(long[] starts, IntConsumer produce, CUdeviceptr[] srcs, long[][] dsts) {
        final int parts = starts.length - 1;
        try (Copies copies = new Copies(starts[parts] - starts[0] <= PinnedPieces.PIECE_LONGS)) {
            for (int k = 0; k < parts; k++) {
                produce.accept(k);
                final CUevent done = copies.computed();
                for (int a = 0; a < srcs.length; a++) {
                    copies.down(srcs[a], dsts[a], starts[k], starts[k + 1] - starts[k], done);
                }
            }
        }
    }

    /** Longs of a pipelined lookup's chunks in a window of {@code count}. */
    static int lookupChunkLongs(int count) {
        final int target = LOOKUP_TARGET_CHUNKS;
        return Math.max(LOOKUP_CHUNK_MIN_LONGS, Math.min(LOOKUP_CHUNK_MAX_LONGS, (count + target - 1) / target));
    }

    @Override
    public boolean pipelinesLookups() {
        return true;
    }

    @Override
    public boolean pipelinedLookup(long[] queries, int n, long[] keys, long[] values, PipelinedLookup lookup,
                                   boolean checkSort) {
        lookup.writeTo(lookupArgs, checkSort);
        // in place, the sort check reads the query before a warp's first one from the heap, where the warp before
        // may have written its answer already if the answers go over the queries: those take the copies
        final boolean answersOverQueries = values == queries || keys == queries;
        lastLookupMapped = n <= MAPPED_LOOKUP_MAX_LONGS && HeapRegistration.mappedForDevice()
                && !(checkSort && answersOverQueries) && lookupMapped(queries, n, keys, values);
        for (int from = lastLookupMapped ? n : 0; from < n; from += LOOKUP_WINDOW_LONGS) {
            final int count = Math.min(LOOKUP_WINDOW_LONGS, n - from);
            DeviceMemoryNative.check(HostArrayDma.lookupWindow(queries, values, keys, from, count,
                    lookupChunkLongs(count), lookupArgs, sortCheck), "pipelined lookup");
        }
        // the check's int is the low half; the kernel only lowers it from Integer.MAX_VALUE
        return checkSort && (int) sortCheck[0] != Integer.MAX_VALUE;
    }

    /**
     * A lookup in place ({@link HostArrayDma#lookupMapped}); false, having done nothing, where an array is not
     * mapped.
     */
    private boolean lookupMapped(long[] queries, int n, long[] keys, long[] values) {
        final int code = HostArrayDma.lookupMapped(queries, values, keys, 0, n, lookupArgs, sortCheck);
        if (code == HostArrayDma.NOT_MAPPED) {
            return false;
        }
        DeviceMemoryNative.check(code, "lookup in place");
        return true;
    }

    /** Whether the last pipelined lookup read and wrote its host arrays in place, with no copy. */
    boolean lastLookupMapped() {
        return lastLookupMapped;
    }

    @Override
    public void lookup(long[] queries, int n, CUdeviceptr queriesOnDevice, ChunkWork work,
                       CUdeviceptr[] resultsOnDevice, long[][] results) {
        if (n == 0) {
            return;
        }
        final ChunkPlan plan = plan(n);
        final int chunks = plan.chunks();
        try (Copies copies = new Copies(chunks == 1)) {
            final List<CompletableFuture<Void>> arrivals = new ArrayList<>();
            for (int k = 0; k < Math.min(2, chunks); k++) {
                arrivals.add(copies.up(queries, plan.chunkStart(k), plan.chunkLength(k), queriesOnDevice));
            }
            for (int k = 0; k < chunks; k++) {
                join(arrivals.get(k));
                if (k + 2 < chunks) {
                    // the chunk after next goes up (behind the next) while this one is worked on
                    arrivals.add(copies.up(queries, plan.chunkStart(k + 2), plan.chunkLength(k + 2),
                            queriesOnDevice));
                }
                work.run(plan.chunkStart(k), plan.chunkLength(k));
                final CUevent done = copies.computed();
                for (int a = 0; a < results.length; a++) {
                    copies.down(resultsOnDevice[a], results[a], plan.chunkStart(k), plan.chunkLength(k), done);
                }
            }
        }
    }

    /**
     * One call's copies in flight. Closing waits for all of them, even after a failure, and throws the first
     * failure.
     */
    private final class Copies implements AutoCloseable {
        /** Whether the copies run on the calling thread: a small call, whose hand-over would cost more. */
        private final boolean inline;
        /** What the copy threads wait for before they copy (null: nothing). */
        private final CompletableFuture<Void> after;
        private final List<CompletableFuture<Void>> started = new ArrayList<>();
        /** Per part: its downloads, done when all are; an event is recorded again only after those of its last part. */
        private final List<List<CompletableFuture<Void>>> partDownloads = new ArrayList<>();

        Copies(boolean inline) {
            this(inline, null);
        }

        Copies(boolean inline, CompletableFuture<Void> after) {
            this.inline = inline;
            this.after = after;
        }

        /** Starts a part: an event recorded after the compute stream's work so far, for its downloads to wait on. */
        CUevent computed() {
            final int part = partDownloads.size();
            if (part >= READY_EVENTS) {
                partDownloads.get(part - READY_EVENTS).forEach(DirectCopies::join);
            }
            final CUevent event = ready[part % READY_EVENTS];
            cuEventRecord(event, compute.stream());
            partDownloads.add(new ArrayList<>());
            return event;
        }

        /** Copies {@code src[from, from + count)} to {@code dst} at the same place; done when the future is. */
        CompletableFuture<Void> up(long[] src, long from, long count, CUdeviceptr dst) {
            final long base = DeviceBuffer.addressOf(dst);
            return segments(CopyThreads.up(), from, count, (at, length) -> DeviceMemoryNative.check(HostArrayDma.toDevice(src,
                    (int) at, length, base + at * Long.BYTES, in.address()), "copy to the device"));
        }

        /**
         * Copies {@code count} longs of {@code src} from {@code from} into {@code dst} at the same place once
         * {@code ready} (the last part's event, {@link #computed()}) has passed.
         */
        void down(CUdeviceptr src, long[] dst, long from, long count, CUevent ready) {
            final long base = DeviceBuffer.addressOf(src);
            partDownloads.get(partDownloads.size() - 1).add(segments(CopyThreads.down(), from, count, (at, length) -> {
                cuEventSynchronize(ready);
                DeviceMemoryNative.check(HostArrayDma.toHost(base + at * Long.BYTES, dst, (int) at, length,
                        out.address()), "copy to the host");
            }));
        }

        private CompletableFuture<Void> segments(ExecutorService threads, long from, long count, Segment copy) {
            final List<CompletableFuture<Void>> parts = new ArrayList<>();
            for (long at = from; at < from + count; at += SEGMENT_LONGS) {
                final long start = at;
                final int length = (int) Math.min(SEGMENT_LONGS, from + count - at);
                final CompletableFuture<Void> part;
                if (inline) {
                    copy.run(start, length);
                    part = CompletableFuture.completedFuture(null);
                } else {
                    part = CompletableFuture.runAsync(() -> {
                        if (after != null) {
                            join(after, AFTER_SPIN_NANOS);
                        }
                        device.makeCurrent();
                        copy.run(start, length);
                    }, threads);
                }
                parts.add(part);
                started.add(part);
            }
            return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new));
        }

        @Override
        public void close() {
            RuntimeException failure = null;
            for (CompletableFuture<Void> f : started) {
                try {
                    join(f);
                } catch (RuntimeException e) {
                    failure = failure == null ? e : failure;
                }
            }
            if (failure != null) {
                throw failure;
            }
        }
    }

    /** A copy of {@code length} longs at {@code at}. */
    @FunctionalInterface
    private interface Segment {
        void run(long at, int length);
    }

    /** An event whose raw handle can be read, to hand to native code. */
    private static final class RawEvent extends CUevent {
        long address() {
            return getNativePointer();
        }
    }

    private static void join(CompletableFuture<Void> f) {
        join(f, SPIN_NANOS);
    }

    /**
     * Waits for {@code f}, spinning up to {@code spinNanos} before it parks: a parked thread takes tens of
     * microseconds to wake, as long as a small call's copy takes on the bus.
     */
    private static void join(CompletableFuture<Void> f, long spinNanos) {
        final long until = System.nanoTime() + spinNanos;
        while (!f.isDone() && System.nanoTime() < until) {
            Thread.onSpinWait();
        }
        Waits.join(f);
    }

    private void destroyEvents() {
        for (int k = 0; k < READY_EVENTS; k++) {
            if (ready[k] != null) {
                cuEventDestroy(ready[k]);
                ready[k] = null;
            }
        }
        for (int k = 0; k < lookupEvents.length; k++) {
            if (lookupEvents[k] != null) {
                cuEventDestroy(lookupEvents[k]);
                lookupEvents[k] = null;
            }
        }
    }

    @Override
    public void close() {
        in.close();
        out.close();
        lookupAlternate.close();
        destroyEvents();
    }
}
