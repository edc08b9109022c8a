package io.flix.flink.payload;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class FreeIdSetTest {

    @Test
    void handsOutTheLowestIdAsASortedSetWould() {
        final FreeIdSet set = new FreeIdSet();
        final TreeSet<Integer> model = new TreeSet<>();
        final SplittableRandom random = new SplittableRandom(11);
        for (int step = 0; step < 300_000; step++) {
            final int roll = random.nextInt(100);
            if (roll < 55) {
                // ids across several levels of the tree: small, and up to 2^22
                final int id = random.nextInt(4) == 0 ? random.nextInt(1 << 22) : random.nextInt(5000);
                if (model.add(id)) {
                    set.add(id);
                } else {
                    assertThrows(IllegalStateException.class, () -> set.add(id));
                }
            } else if (roll < 99) {
                final Integer lowest = model.pollFirst();
                assertEquals(lowest == null ? -1 : lowest, set.pollLowest());
            } else {
                final int top = random.nextInt(1 << 22);
                model.tailSet(top, true).clear();
                set.removeFrom(top);
            }
            assertEquals(model.size(), set.size());
            assertEquals(model.isEmpty() ? -1 : model.first(), set.lowest());
        }
        set.removeFrom(0);
        assertEquals(0, set.size());
        assertEquals(-1, set.pollLowest());
        assertEquals(new FreeIdSet().heapBytes(), set.heapBytes(), "emptied to the top: back to its first size");
    }
}
