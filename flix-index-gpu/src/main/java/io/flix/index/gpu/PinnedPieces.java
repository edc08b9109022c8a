package io.flix.index.gpu;

import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The process's pinned staging memory, in pieces of {@link #PIECE_LONGS} longs that every index borrows for the
 * length of one call and gives back: pinning memory is slow (tens of ms for the staging of a large call), so a new
 * index (a restore) finds it pinned already, and idle indexes hold none. Grows to the pieces in use at once; kept
 * until the class loader's GPU state is released ({@link GpuRuntime#release()}; pinned memory is portable between the
 * contexts under unified addressing).
 */
final class PinnedPieces {

    /** Longs a piece holds (1 MiB): small enough that a batch of 2^20 keys is packed by eight threads. */
    static final int PIECE_LONGS = 1 << 17;

    private static final ConcurrentLinkedDeque<PinnedBuffer> FREE = new ConcurrentLinkedDeque<>();
    private static final AtomicLong PINNED_BYTES = new AtomicLong();

    private PinnedPieces() {
    }

    /** A piece, pinned now where none is free (on a thread with a context current). */
    static PinnedBuffer take() {
        final PinnedBuffer free = FREE.pollFirst();
        if (free != null) {
            return free;
        }
        final PinnedBuffer piece = new PinnedBuffer();
        piece.ensureLongs(PIECE_LONGS);
        PINNED_BYTES.addAndGet(PIECE_LONGS * (long) Long.BYTES);
        return piece;
    }

    /** Gives a piece back (no copy into or out of it may be in flight). */
    static void give(PinnedBuffer piece) {
        FREE.addFirst(piece);
    }

    /** Frees the pieces given back (none may be lent: no index of this class loader is open). */
    static void freeAll() {
        for (PinnedBuffer piece = FREE.pollFirst(); piece != null; piece = FREE.pollFirst()) {
            piece.close();
            PINNED_BYTES.addAndGet(-PIECE_LONGS * (long) Long.BYTES);
        }
    }

    /** Pinned bytes held by the pool, free or lent. */
    static long pinnedBytes() {
        return PINNED_BYTES.get();
    }
}
