package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

/** Where the chunks of a pipelined get's window end ({@link DirectCopies#getChunkEnds}). */
class GetChunkEndsTest {

    @Test
    void everyWindowIsCutIntoAscendingChunksThatCoverItAndFitTheNativeLimit() {
        final SplittableRandom random = new SplittableRandom(5);
        final int[] sizes = IntStream.concat(IntStream.of(1, 2, DirectCopies.GET_CHUNK_MIN_LONGS - 1,
                        DirectCopies.GET_CHUNK_MIN_LONGS, DirectCopies.GET_CHUNK_MIN_LONGS + 1,
                        DirectCopies.GET_RAMP_MIN_CHUNKS * DirectCopies.GET_CHUNK_MIN_LONGS - 1,
                        DirectCopies.GET_RAMP_MIN_CHUNKS * DirectCopies.GET_CHUNK_MIN_LONGS, 1 << 20, 1 << 22,
                        DirectCopies.GET_WINDOW_LONGS - 1, DirectCopies.GET_WINDOW_LONGS),
                random.ints(200, 1, DirectCopies.GET_WINDOW_LONGS + 1)).toArray();
        for (int count : sizes) {
            final int[] ends = DirectCopies.getChunkEnds(count);
            final int chunk = DirectCopies.getChunkLongs(count);
            assertTrue(ends.length >= 1 && ends.length <= KernelContract.GET_MAX_CHUNKS, count + ": " + ends.length);
            assertEquals(count, ends[ends.length - 1], "the last chunk ends the window of " + count);
            for (int k = 0; k < ends.length; k++) {
                final int length = ends[k] - (k == 0 ? 0 : ends[k - 1]);
                assertTrue(length >= 1 && length <= chunk, count + ": chunk " + k + " holds " + length);
            }
        }
    }

    @Test
    void aWindowOfFourChunksOrMoreStartsAndEndsWithAHalfChunk() {
        final int chunk = DirectCopies.getChunkLongs(1 << 20);
        assertEquals(DirectCopies.GET_CHUNK_MIN_LONGS, chunk);
        final int half = chunk / 2;
        final int[] expected = new int[9];
        expected[0] = half;
        for (int k = 1; k < 8; k++) {
            expected[k] = half + k * chunk;
        }
        expected[8] = 1 << 20;
        assertArrayEquals(expected, DirectCopies.getChunkEnds(1 << 20));
    }

    @Test
    void aSmallerWindowGoesInEqualChunksTheLastOneTheRest() {
        final int chunk = DirectCopies.GET_CHUNK_MIN_LONGS;
        final int count = 3 * chunk + 5;
        assertArrayEquals(new int[] {chunk, 2 * chunk, 3 * chunk, count}, DirectCopies.getChunkEnds(count));
        assertArrayEquals(new int[] {7}, DirectCopies.getChunkEnds(7));
        assertArrayEquals(new int[0], DirectCopies.getChunkEnds(0));
    }
}
