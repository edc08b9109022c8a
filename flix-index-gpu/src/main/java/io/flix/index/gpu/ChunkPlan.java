package io.flix.index.gpu;

/**
 * How a batch of {@code n} longs is cut for the trip over the bus: into pieces, each staged through one pinned slot
 * (the host packs or unpacks a piece while the device copies others), and pieces grouped into chunks, each of which
 * the device works on in one go (a lookup chunk goes up, is looked up and comes back while the next chunk goes up).
 * Pieces hold {@code pieceLongs} longs, the last one the rest; a chunk holds {@code piecesPerChunk} pieces, the last
 * one the rest. Chunks are about a sixteenth of the batch (so the copies overlap in both directions), but never
 * fewer than {@code minPiecesPerChunk} pieces (a chunk costs a pass of the lookup kernels and a few round trips:
 * small batches go in one or a few chunks) nor more than {@code maxPiecesPerChunk}. An empty batch has no pieces
 * and no chunks.
 */
record ChunkPlan(int n, int pieceLongs, int piecesPerChunk) {

    /** Chunks a batch is cut into where it is large enough. */
    static final int TARGET_CHUNKS = 16;

    ChunkPlan {
        if (n < 0 || pieceLongs < 1 || piecesPerChunk < 1) {
            throw new IllegalArgumentException("n = " + n + ", pieceLongs = " + pieceLongs + ", piecesPerChunk = "
                    + piecesPerChunk + ": n must be >= 0, the others >= 1");
        }
    }

    /**
     * The plan for {@code n} longs in pieces of {@code pieceLongs}, chunks of {@code minPiecesPerChunk} to
     * {@code maxPiecesPerChunk} pieces.
     */
    static ChunkPlan of(int n, int pieceLongs, int minPiecesPerChunk, int maxPiecesPerChunk) {
        if (n < 0 || pieceLongs < 1 || minPiecesPerChunk < 1 || maxPiecesPerChunk < minPiecesPerChunk) {
            throw new IllegalArgumentException("n = " + n + ", pieceLongs = " + pieceLongs + ", pieces per chunk "
                    + minPiecesPerChunk + " to " + maxPiecesPerChunk + ": n must be >= 0, the others >= 1, in order");
        }
        final long pieces = pieces(n, pieceLongs);
        final long perChunk = Math.max(minPiecesPerChunk,
                Math.min(maxPiecesPerChunk, (pieces + TARGET_CHUNKS - 1) / TARGET_CHUNKS));
        return new ChunkPlan(n, pieceLongs, (int) perChunk);
    }

    private static long pieces(int n, int pieceLongs) {
        return (n + (long) pieceLongs - 1) / pieceLongs;
    }

    int pieces() {
        return (int) pieces(n, pieceLongs);
    }

    /** First long of piece {@code p}. */
    long pieceStart(int p) {
        return (long) p * pieceLongs;
    }

    /** Longs of piece {@code p}. */
    int pieceLength(int p) {
        return (int) Math.min(pieceLongs, n - pieceStart(p));
    }

    int chunks() {
        return (pieces() + piecesPerChunk - 1) / piecesPerChunk;
    }

    int firstPiece(int chunk) {
        return chunk * piecesPerChunk;
    }

    /** One past the last piece of {@code chunk}. */
    int endPiece(int chunk) {
        return Math.min(pieces(), (chunk + 1) * piecesPerChunk);
    }

    /** First long of {@code chunk}. */
    long chunkStart(int chunk) {
        return pieceStart(firstPiece(chunk));
    }

    /** Longs of {@code chunk}. */
    int chunkLength(int chunk) {
        return (int) Math.min((long) piecesPerChunk * pieceLongs, n - chunkStart(chunk));
    }
}
