package io.flix.index.batch;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static io.flix.index.FlixIndex.NOT_FOUND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class UpdateOverlayTest {

    /** Batches of growing and shrinking size, keys that share their hash's top bits, against a map. */
    @Test
    void everyBatchSeesItsOwnUpdatesOnlyInFirstUpdateOrder() {
        final UpdateOverlay overlay = new UpdateOverlay();
        final SplittableRandom random = new SplittableRandom(11);
        for (int batch = 0; batch < 200; batch++) {
            final int updates = List.of(0, 1, 3, 17, 1000, 5000).get(random.nextInt(6));
            overlay.reset(updates);
            final Map<Long, Long> expected = new LinkedHashMap<>();
            final long domain = 1 + random.nextInt(3 * updates + 1);
            for (int u = 0; u < updates; u++) {
                final long key = key(random, domain);
                final long value = random.nextInt(4) == 0 ? NOT_FOUND : random.nextLong();
                overlay.put(key, value);
                expected.put(key, value);
                final long probe = key(random, domain);
                final int entry = overlay.entryOf(probe);
                if (expected.containsKey(probe)) {
                    assertEquals(probe, overlay.key(entry), "batch " + batch);
                    assertEquals(expected.get(probe), overlay.value(entry), "batch " + batch);
                } else {
                    assertEquals(-1, entry, "batch " + batch + ": key " + probe + " not updated in this batch");
                }
            }
            assertEquals(expected.size(), overlay.size(), "batch " + batch);
            int entry = 0;
            for (Map.Entry<Long, Long> e : expected.entrySet()) {
                assertEquals(e.getKey(), overlay.key(entry), "batch " + batch + " entry " + entry);
                assertEquals(e.getValue(), overlay.value(entry), "batch " + batch + " entry " + entry);
                entry++;
            }
        }
    }

    /** Multiples of a large power of two: the same low bits, only the hash's top bits tell them apart. */
    private static long key(SplittableRandom random, long domain) {
        return switch (random.nextInt(3)) {
            case 0 -> random.nextLong(domain) << 40;
            case 1 -> random.nextLong(domain) - domain / 2;
            default -> List.of(Long.MIN_VALUE, Long.MAX_VALUE, 0L, -1L).get(random.nextInt(4));
        };
    }

    @Test
    void aResetForgetsTheLastBatchWhateverItsSize() {
        final UpdateOverlay overlay = new UpdateOverlay();
        overlay.reset(3000);
        for (long k = 0; k < 3000; k++) {
            overlay.put(k * 7919, k);
        }
        overlay.reset(2);
        assertEquals(0, overlay.size());
        final Map<Long, Integer> found = new HashMap<>();
        for (long k = 0; k < 3000; k++) {
            found.merge((long) overlay.entryOf(k * 7919), 1, Integer::sum);
        }
        assertEquals(Map.of(-1L, 3000), found, "no key of the last batch is left");
        overlay.put(Long.MIN_VALUE, 5);
        overlay.put(Long.MIN_VALUE, NOT_FOUND);
        assertEquals(1, overlay.size());
        assertEquals(NOT_FOUND, overlay.value(overlay.entryOf(Long.MIN_VALUE)));
    }

    @Test
    void aBatchTooLargeToOverlayIsRefusedWithItsSize() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new UpdateOverlay().reset(Integer.MAX_VALUE));
        assertEquals("a batch of " + Integer.MAX_VALUE + " updates is too large to overlay (at most "
                + UpdateOverlay.MAX_UPDATES + ")", e.getMessage());
    }
}
