package io.flix.index.cpu;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The router names the same shard as a search of the bounds, over wide, narrow and extreme bounds. */
class RangeRouterTest {

    @Test
    void namesTheShardASearchOfTheBoundsNames() {
        final SplittableRandom random = new SplittableRandom(11);
        for (int round = 0; round < 300; round++) {
            final int shards = 1 + random.nextInt(40);
            final long width = switch (round % 4) {
                case 0 -> Long.MAX_VALUE; // bounds over the whole range
                case 1 -> 1L << 20;       // a narrow span: every bound in few buckets
                case 2 -> 64;             // narrower than the buckets
                default -> 1L << 50;
            };
            final long center = round % 8 == 7 ? Long.MAX_VALUE - width : random.nextLong();
            final TreeSet<Long> picked = new TreeSet<>();
            picked.add(Long.MIN_VALUE);
            while (picked.size() < shards) {
                picked.add(width == Long.MAX_VALUE ? random.nextLong() : center + random.nextLong(width));
            }
            if (round % 5 == 4) {
                picked.add(Long.MAX_VALUE); // the last range holds one key
            }
            final long[] lower = picked.stream().mapToLong(Long::longValue).toArray();
            final RangeRouter router = new RangeRouter(lower);
            for (int i = 0; i < 2_000; i++) {
                final long key = switch (i % 5) {
                    case 0 -> random.nextLong();
                    case 1 -> lower[random.nextInt(lower.length)];
                    case 2 -> lower[random.nextInt(lower.length)] - 1;
                    case 3 -> center + random.nextLong(Math.max(1, Math.min(width, Long.MAX_VALUE / 2)));
                    default -> i % 2 == 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
                };
                final int r = round;
                assertEquals(linearSearch(lower, key), router.shardOf(key), () -> "key " + key + " round " + r);
            }
        }
    }

    private static int linearSearch(long[] lower, long key) {
        int s = 0;
        while (s + 1 < lower.length && lower[s + 1] <= key) {
            s++;
        }
        return s;
    }
}
