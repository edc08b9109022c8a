package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuEventCreate;
import static jcuda.driver.JCudaDriver.cuEventDestroy;
import static jcuda.driver.JCudaDriver.cuEventRecord;
import static jcuda.driver.JCudaDriver.cuEventSynchronize;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoHAsync;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoDAsync;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUevent;
import jcuda.driver.CUevent_flags;

/**
 * The host-device copies of one index, Java {@code long[]} in and out at the speed of the bus: arrays travel in
 * pieces ({@link ChunkPlan}) through pinned slots borrowed from {@link PinnedPieces}; host threads pack the next
 * pieces into their slots (and unpack arrived ones) while the device copies others, on two copy streams of the
 * index's own (one each way) beside its compute stream. A lookup runs as a pipeline of chunks ({@link #lookup}):
 * chunk k + 1 goes up while chunk k is looked up and chunk k - 1 comes back, so the copies in both directions and
 * the kernels overlap. Calls of one index are serialised by its lock; create, use and close with the device's
 * context current.
 */
final class StagedCopies implements HostArrayCopies {

    /** Pieces a lookup chunk holds at least (8 MiB): smaller batches go in one chunk. */
    static final int MIN_PIECES_PER_CHUNK = 8;
    /** Pieces a lookup chunk holds at most (32 MiB): each chunk costs a pass of the lookup kernels. */
    static final int MAX_PIECES_PER_CHUNK = 32;
    /** Pieces in flight to the device: two chunks' worth (one copying, one packing). */
    private static final int IN_SLOTS = 2 * MAX_PIECES_PER_CHUNK;
    /** Pieces in flight to the host: two chunks of one result array, one of two. */
    private static final int OUT_SLOTS = 2 * MAX_PIECES_PER_CHUNK;

    private final GpuRuntime.DeviceContext device;
    private final DeviceStream compute;
    private final DeviceStream in;
    private final DeviceStream out;
    /** Per slot: recorded when the copy out of (into) the slot has been issued; passed once it is done. */
    private final CUevent[] inSlotDone = new CUevent[IN_SLOTS];
    private final CUevent[] outSlotDone = new CUevent[OUT_SLOTS];
    /** Chunks arrived on the device (two: the next chunk's is recorded before the current one is worked on). */
    private final CUevent[] arrived = new CUevent[2];
    private final CUevent computed = new CUevent();
    private final List<CUevent> created = new ArrayList<>();
    private final List<DeviceStream> streams = new ArrayList<>();

    StagedCopies(GpuRuntime.DeviceContext device, DeviceStream compute) {
        this.device = device;
        this.compute = compute;
        try {
            this.in = stream();
            this.out = stream();
            for (int i = 0; i < IN_SLOTS; i++) {
                inSlotDone[i] = event();
            }
            for (int i = 0; i < OUT_SLOTS; i++) {
                outSlotDone[i] = event();
            }
            arrived[0] = event();
            arrived[1] = event();
            created.add(computed);
            cuEventCreate(computed, CUevent_flags.CU_EVENT_DISABLE_TIMING);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private DeviceStream stream() {
        final DeviceStream s = new DeviceStream();
        streams.add(s);
        return s;
    }

    private CUevent event() {
        final CUevent e = new CUevent();
        cuEventCreate(e, CUevent_flags.CU_EVENT_DISABLE_TIMING);
        created.add(e);
        return e;
    }

    @Override
    public void uploadAll(long[][] srcs, int n, CUdeviceptr[] dsts) {
        if (n == 0) {
            return;
        }
        final ChunkPlan plan = plan(n);
        try (Trip trip = new Trip(plan.pieces() == 1)) {
            for (int a = 0; a < srcs.length; a++) {
                for (int p = 0; p < plan.pieces(); p++) {
                    trip.queueUp(srcs[a], plan.pieceStart(p), plan.pieceLength(p), dsts[a]);
                }
            }
            trip.issueUp(trip.queuedUp());
            cuEventRecord(arrived[0], in.stream());
            compute.waitFor(arrived[0]);
            trip.finish();
        }
    }

    @Override
    public void downloadAll(CUdeviceptr[] srcs, long[][] dsts, int n) {
        if (n == 0) {
            return;
        }
        final ChunkPlan plan = plan(n);
        try (Trip trip = new Trip(plan.pieces() == 1)) {
            cuEventRecord(computed, compute.stream());
            out.waitFor(computed);
            for (int p = 0; p < plan.pieces(); p++) {
                for (int a = 0; a < srcs.length; a++) {
                    trip.down(srcs[a], dsts[a], plan.pieceStart(p), plan.pieceLength(p));
                }
            }
            trip.finish();
        }
    }

    @Override
    public void produceAndDownload(long[] starts, java.util.function.IntConsumer produce, CUdeviceptr[] srcs,
                                   long[][] dsts) {
        final int parts = starts.length - 1;
        final long total = starts[parts] - starts[0];
        try (Trip trip = new Trip(total <= PinnedPieces.PIECE_LONGS)) {
            for (int k = 0; k < parts; k++) {
                produce.accept(k);
                cuEventRecord(computed, compute.stream());
                out.waitFor(computed);
                for (long at = starts[k]; at < starts[k + 1]; at += PinnedPieces.PIECE_LONGS) {
                    final int count = (int) Math.min(PinnedPieces.PIECE_LONGS, starts[k + 1] - at);
                    for (int a = 0; a < srcs.length; a++) {
                        trip.down(srcs[a], dsts[a], at, count);
                    }
                }
            }
            trip.finish();
        }
    }

    @Override
    public void lookup(long[] queries, int n, CUdeviceptr queriesOnDevice, ChunkWork work,
                       CUdeviceptr[] resultsOnDevice, long[][] results) {
        if (n == 0) {
            return;
        }
        final ChunkPlan plan = plan(n);
        final int chunks = plan.chunks();
        try (Trip trip = new Trip(plan.pieces() == 1)) {
            queueChunkUp(trip, plan, 0, queries, queriesOnDevice);
            trip.issueUp(trip.queuedUp());
            cuEventRecord(arrived[0], in.stream());
            if (chunks > 1) {
                queueChunkUp(trip, plan, 1, queries, queriesOnDevice);
            }
            for (int k = 0; k < chunks; k++) {
                if (k + 1 < chunks) {
                    // the next chunk goes up while this one is worked on
                    trip.issueUp(trip.queuedUp());
                    cuEventRecord(arrived[(k + 1) & 1], in.stream());
                    if (k + 2 < chunks) {
                        queueChunkUp(trip, plan, k + 2, queries, queriesOnDevice);
                    }
                }
                compute.waitFor(arrived[k & 1]);
                work.run(plan.chunkStart(k), plan.chunkLength(k));
                cuEventRecord(computed, compute.stream());
                out.waitFor(computed);
                for (int p = plan.firstPiece(k); p < plan.endPiece(k); p++) {
                    for (int a = 0; a < results.length; a++) {
                        trip.down(resultsOnDevice[a], results[a], plan.pieceStart(p), plan.pieceLength(p));
                    }
                }
            }
            trip.finish();
        }
    }

    /** How a batch of n longs crosses the bus. */
    static ChunkPlan plan(int n) {
        return ChunkPlan.of(n, PinnedPieces.PIECE_LONGS, MIN_PIECES_PER_CHUNK, MAX_PIECES_PER_CHUNK);
    }

    private static void queueChunkUp(Trip trip, ChunkPlan plan, int chunk, long[] src, CUdeviceptr dst) {
        for (int p = plan.firstPiece(chunk); p < plan.endPiece(chunk); p++) {
            trip.queueUp(src, plan.pieceStart(p), plan.pieceLength(p), dst);
        }
    }

    /**
     * One call's staging: its slots (pinned pieces borrowed for the call), the host copies in flight and the copies
     * issued. Closing it waits for everything it started, even after a failure, and gives the slots back.
     */
    private final class Trip implements AutoCloseable {
        /**
         * Whether the host copies run on the calling thread: a batch of one piece (a micro-batch), whose hand-over
         * to the pool would cost more than its copies.
         */
        private final boolean inline;
        private final PinnedBuffer[] inSlots = new PinnedBuffer[IN_SLOTS];
        private final PinnedBuffer[] outSlots = new PinnedBuffer[OUT_SLOTS];
        private final List<Piece> ups = new ArrayList<>();
        private final List<CompletableFuture<Void>> unpacks = new ArrayList<>();
        private int issuedUp;

        private record Piece(long from, int count, CUdeviceptr device, int slot, CompletableFuture<Void> pack) {
        }

        Trip(boolean inline) {
            this.inline = inline;
        }

        int queuedUp() {
            return ups.size();
        }

        /** Queues a piece to go up: its packing starts once its slot's last copy is done. */
        void queueUp(long[] src, long from, int count, CUdeviceptr dst) {
            final int index = ups.size();
            final int slot = index % IN_SLOTS;
            if (index >= IN_SLOTS) {
                issueUp(index - IN_SLOTS + 1); // the slot's last piece must be on its way before it is refilled
            }
            final PinnedBuffer buffer = inSlot(slot);
            final CUevent slotDone = inSlotDone[slot];
            final Runnable pack = () -> {
                cuEventSynchronize(slotDone);
                buffer.longs().duplicate().put(0, src, (int) from, count);
            };
            ups.add(new Piece(from, count, dst, slot, hostCopy(pack)));
        }

        /** Issues the copies of the queued pieces up to {@code end} (exclusive), each once it is packed. */
        void issueUp(int end) {
            for (; issuedUp < end; issuedUp++) {
                final Piece piece = ups.get(issuedUp);
                Waits.join(piece.pack());
                cuMemcpyHtoDAsync(piece.device().withByteOffset(piece.from() * Long.BYTES),
                        inSlots[piece.slot()].pointer(0), piece.count() * (long) Long.BYTES, in.stream());
                cuEventRecord(inSlotDone[piece.slot()], in.stream());
            }
        }

        /** Issues the copy of one piece to the host (after the out stream's waits so far) and its unpacking. */
        void down(CUdeviceptr src, long[] dst, long from, int count) {
            final int index = unpacks.size();
            final int slot = index % OUT_SLOTS;
            if (index >= OUT_SLOTS) {
                Waits.join(unpacks.get(index - OUT_SLOTS)); // the slot's last piece has left it
            }
            final PinnedBuffer buffer = outSlot(slot);
            final CUevent slotDone = outSlotDone[slot];
            cuMemcpyDtoHAsync(buffer.pointer(0), src.withByteOffset(from * Long.BYTES), count * (long) Long.BYTES,
                    out.stream());
            cuEventRecord(slotDone, out.stream());
            unpacks.add(hostCopy(() -> {
                cuEventSynchronize(slotDone);
                buffer.longs().duplicate().get(0, dst, (int) from, count);
            }));
        }

        /** Waits for every host copy. */
        void finish() {
            issueUp(ups.size());
            for (CompletableFuture<Void> u : unpacks) {
                Waits.join(u);
            }
        }

        private CompletableFuture<Void> hostCopy(Runnable copy) {
            if (inline) {
                copy.run();
                return CompletableFuture.completedFuture(null);
            }
            return CompletableFuture.runAsync(() -> {
                device.makeCurrent();
                copy.run();
            }, CopyThreads.staging());
        }

        private PinnedBuffer inSlot(int slot) {
            if (inSlots[slot] == null) {
                inSlots[slot] = PinnedPieces.take();
            }
            return inSlots[slot];
        }

        private PinnedBuffer outSlot(int slot) {
            if (outSlots[slot] == null) {
                outSlots[slot] = PinnedPieces.take();
            }
            return outSlots[slot];
        }

        /** Waits for the copies issued and the host copies started, then gives the slots back. */
        @Override
        public void close() {
            RuntimeException failure = null;
            for (DeviceStream s : new DeviceStream[] {in, out}) {
                try {
                    s.synchronize();
                } catch (RuntimeException e) {
                    failure = failure == null ? e : failure;
                }
            }
            final List<CompletableFuture<Void>> started = new ArrayList<>(unpacks);
            ups.forEach(p -> started.add(p.pack()));
            for (CompletableFuture<Void> f : started) {
                try {
                    f.join();
                } catch (RuntimeException e) {
                    failure = failure == null ? e : failure;
                }
            }
            for (PinnedBuffer[] slots : List.of(inSlots, outSlots)) {
                for (int i = 0; i < slots.length; i++) {
                    if (slots[i] != null) {
                        PinnedPieces.give(slots[i]);
                        slots[i] = null;
                    }
                }
            }
            if (failure != null) {
                throw Waits.unwrap(failure);
            }
        }
    }

    @Override
    public void close() {
        for (DeviceStream s : streams) {
            s.close();
        }
        streams.clear();
        for (CUevent e : created) {
            cuEventDestroy(e);
        }
        created.clear();
        java.util.Arrays.fill(inSlotDone, null);
        java.util.Arrays.fill(outSlotDone, null);
        java.util.Arrays.fill(arrived, null);
    }
}
