package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** How batches are cut into pieces and chunks for the bus: every long in exactly one piece, in order. */
class ChunkPlanTest {

    private static final int PIECE = 1000;
    private static final int MAX_PER_CHUNK = 8;

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 999, 1000, 1001, 2000, 15_999, 16_000, 16_001, 31_999, 32_000, 32_001, 127_999,
        128_000, 128_001, 1_000_003, 5_000_000})
    void piecesAndChunksCoverTheBatchOnceInOrder(int n) {
        final ChunkPlan plan = ChunkPlan.of(n, PIECE, 1, MAX_PER_CHUNK);
        long next = 0;
        for (int p = 0; p < plan.pieces(); p++) {
            assertEquals(next, plan.pieceStart(p), "piece " + p);
            assertTrue(plan.pieceLength(p) >= 1 && plan.pieceLength(p) <= PIECE, "piece " + p);
            assertTrue(p == plan.pieces() - 1 || plan.pieceLength(p) == PIECE, "only the last piece is short");
            next += plan.pieceLength(p);
        }
        assertEquals(n, next, "the pieces end at n");
        int piece = 0;
        long chunkNext = 0;
        for (int c = 0; c < plan.chunks(); c++) {
            assertEquals(piece, plan.firstPiece(c), "chunk " + c);
            assertEquals(chunkNext, plan.chunkStart(c), "chunk " + c);
            long length = 0;
            for (int p = plan.firstPiece(c); p < plan.endPiece(c); p++) {
                length += plan.pieceLength(p);
            }
            assertEquals(length, plan.chunkLength(c), "chunk " + c + " is its pieces");
            assertTrue(plan.endPiece(c) - plan.firstPiece(c) <= MAX_PER_CHUNK, "chunk " + c);
            piece = plan.endPiece(c);
            chunkNext += length;
        }
        assertEquals(plan.pieces(), piece, "the chunks end at the last piece");
        assertEquals(n, chunkNext);
    }

    @Test
    void anEmptyBatchHasNoPiecesAndNoChunks() {
        final ChunkPlan plan = ChunkPlan.of(0, PIECE, 1, MAX_PER_CHUNK);
        assertEquals(0, plan.pieces());
        assertEquals(0, plan.chunks());
    }

    @Test
    void aBatchOfOnePieceOrLessIsOneChunk() {
        for (int n : new int[] {1, PIECE - 1, PIECE}) {
            final ChunkPlan plan = ChunkPlan.of(n, PIECE, 1, MAX_PER_CHUNK);
            assertEquals(1, plan.pieces(), "n = " + n);
            assertEquals(1, plan.chunks(), "n = " + n);
            assertEquals(n, plan.chunkLength(0), "n = " + n);
        }
        final ChunkPlan onePlus = ChunkPlan.of(PIECE + 1, PIECE, 1, MAX_PER_CHUNK);
        assertEquals(2, onePlus.pieces());
        assertEquals(2, onePlus.chunks(), "a piece and one long: two chunks, so the copies overlap");
        assertEquals(1, onePlus.chunkLength(1));
    }

    @Test
    void chunksAreAboutASixteenthOfTheBatchWithinTheirBounds() {
        assertEquals(16, ChunkPlan.of(16 * PIECE, PIECE, 1, MAX_PER_CHUNK).chunks(), "a piece a chunk");
        final ChunkPlan seventeen = ChunkPlan.of(16 * PIECE + 1, PIECE, 1, MAX_PER_CHUNK);
        assertEquals(2, seventeen.piecesPerChunk(), "17 pieces: two a chunk");
        assertEquals(9, seventeen.chunks());
        assertEquals(1, seventeen.chunkLength(8), "the last chunk holds the last long");
        final ChunkPlan large = ChunkPlan.of(1 << 30, PIECE, 1, MAX_PER_CHUNK);
        assertEquals(MAX_PER_CHUNK, large.piecesPerChunk(), "at most MAX pieces a chunk");
    }

    @Test
    void smallBatchesGoInOneChunkOfTheirPieces() {
        final ChunkPlan plan = ChunkPlan.of(8 * PIECE, PIECE, 8, MAX_PER_CHUNK);
        assertEquals(8, plan.pieces());
        assertEquals(1, plan.chunks(), "at least 8 pieces a chunk");
        final ChunkPlan more = ChunkPlan.of(8 * PIECE + 1, PIECE, 8, MAX_PER_CHUNK);
        assertEquals(2, more.chunks());
        assertEquals(1, more.chunkLength(1));
        final ChunkPlan planOfTheBus = StagedCopies.plan(1 << 20);
        assertEquals(1, planOfTheBus.chunks(), "2^20 keys: one chunk of " + planOfTheBus.pieces() + " pieces");
        assertEquals(16, StagedCopies.plan(1 << 24).chunks(), "2^24 keys: sixteen chunks");
        assertEquals(1 << 22, StagedCopies.plan(1 << 26).chunkLength(0), "at most 32 MiB a chunk");
    }

    @Test
    void badPlansAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> ChunkPlan.of(-1, PIECE, 1, MAX_PER_CHUNK));
        assertThrows(IllegalArgumentException.class, () -> ChunkPlan.of(10, 0, 1, MAX_PER_CHUNK));
        assertThrows(IllegalArgumentException.class, () -> ChunkPlan.of(10, PIECE, 0, MAX_PER_CHUNK));
        assertThrows(IllegalArgumentException.class, () -> ChunkPlan.of(10, PIECE, 9, 8));
        assertThrows(IllegalArgumentException.class, () -> new ChunkPlan(10, PIECE, 0));
    }
}
