package io.flix.index;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The range check names the first inverted range, whether it runs on the calling thread or on every core. */
class BatchArgsTest {

    private static long[][] ranges(int n) {
        final long[] lo = new long[n];
        final long[] hi = new long[n];
        for (int i = 0; i < n; i++) {
            lo[i] = i * 3L;
            hi[i] = i * 3L + (i % 5);
        }
        return new long[][] {lo, hi};
    }

    @Test
    void theFirstInvertedRangeIsNamedInSmallAndLargeBatches() {
        for (int n : new int[] {10, BatchArgs.PARALLEL_CHECK_MIN - 1, BatchArgs.PARALLEL_CHECK_MIN + 7}) {
            final long[][] r = ranges(n);
            assertDoesNotThrow(() -> BatchArgs.checkRanges(r[0], r[1], n, 1));
            for (int first : new int[] {0, n / 2, n - 1}) {
                final long[][] bad = ranges(n);
                bad[1][first] = bad[0][first] - 1;
                if (first + 3 < n) {
                    bad[1][n - 1] = bad[0][n - 1] - 2; // a later one is not the one named
                }
                final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                        () -> BatchArgs.checkRanges(bad[0], bad[1], n, 1));
                assertEquals("lo[" + first + "] = " + bad[0][first] + " is greater than hi[" + first + "] = "
                        + bad[1][first], e.getMessage(), "n = " + n);
            }
        }
    }
}
