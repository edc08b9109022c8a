package io.flix.index.cpu;

import static io.flix.index.FlixIndex.NOT_FOUND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

/** The exact-key table against a {@link HashMap}: probing, wrap-around, removes that shift entries back, growth. */
class ExactKeyTableTest {

    private static final long[] EDGE_KEYS = {Long.MIN_VALUE, Long.MIN_VALUE + 1, -1, 0, 1, Long.MAX_VALUE};

    @ParameterizedTest(name = "universe {0}, seed {1}")
    @CsvSource({"8, 1", "24, 2", "200, 3", "5000, 4", "200000, 5"})
    void randomPutsAndRemovesMatchAHashMap(int universe, long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        final long[] keys = new long[universe];
        for (int i = 0; i < universe; i++) {
            keys[i] = i < EDGE_KEYS.length ? EDGE_KEYS[i] : random.nextLong();
        }
        final ExactKeyTable table = new ExactKeyTable();
        final Map<Long, Long> oracle = new HashMap<>();
        for (int step = 0; step < 40; step++) {
            final int ops = 1 + random.nextInt(2 * universe);
            final boolean mostlyRemoves = step % 3 == 2;
            for (int op = 0; op < ops; op++) {
                final long key = keys[random.nextInt(universe)];
                if (random.nextInt(4) < (mostlyRemoves ? 3 : 1)) {
                    table.remove(key);
                    oracle.remove(key);
                } else {
                    final long value = random.nextLong(Long.MIN_VALUE + 1, Long.MAX_VALUE);
                    table.put(key, value);
                    oracle.put(key, value);
                }
            }
            assertEquals(oracle.size(), table.size(), "size after step " + step);
            final long[] answers = new long[universe];
            table.get(keys, 0, universe, answers);
            for (int i = 0; i < universe; i++) {
                assertEquals(oracle.getOrDefault(keys[i], NOT_FOUND), answers[i],
                        "key " + keys[i] + " after step " + step);
            }
            assertTrue(4 * table.size() <= 3 * table.capacity(), "at most three quarters full");
        }
    }

    @Test
    void probesWrapPastTheLastSlotAndARemoveThereKeepsTheRestReachable() {
        final ExactKeyTable table = new ExactKeyTable();
        final long last = table.capacity() - 1;
        final List<Long> homedLast = keysWithHome(table, last, 3);
        final List<Long> homedFirst = keysWithHome(table, 0, 1);
        for (long key : homedLast) {
            table.put(key, key + 1); // slots last, 0 and 1
        }
        table.put(homedFirst.get(0), 7); // home 0 is taken: it probes on to slot 2
        assertEquals(table.capacity(), new ExactKeyTable().capacity(), "no growth: the test is about wrapping");

        table.remove(homedLast.get(0)); // the entries in slots 0 and 1 move back across the end
        assertEquals(NOT_FOUND, table.get(homedLast.get(0)));
        assertEquals(homedLast.get(1) + 1, table.get(homedLast.get(1)));
        assertEquals(homedLast.get(2) + 1, table.get(homedLast.get(2)));
        assertEquals(7, table.get(homedFirst.get(0)));

        table.remove(homedLast.get(1));
        table.remove(homedLast.get(2));
        assertEquals(7, table.get(homedFirst.get(0)), "the key homed at slot 0 is found once the slots before it free");
        assertEquals(1, table.size());
    }

    @Test
    void growsOnDemandAndShrinksToFit() {
        final ExactKeyTable table = new ExactKeyTable();
        final long small = table.bytes();
        final int n = 100_000;
        for (int i = 0; i < n; i++) {
            table.put(i * 1_000_003L, i);
        }
        final long grown = table.bytes();
        assertTrue(grown >= 16L * n * 4 / 3, "two longs a slot, at most three quarters full: " + grown);
        for (int i = 0; i < n; i++) {
            if (i % 100 != 0) {
                table.remove(i * 1_000_003L);
            }
        }
        table.fit();
        assertTrue(table.bytes() < grown / 50 && table.bytes() >= small, table.bytes() + " after fit");
        for (int i = 0; i < n; i++) {
            assertEquals(i % 100 == 0 ? i : NOT_FOUND, table.get(i * 1_000_003L));
        }
    }

    @Test
    void aBatchOfMostlyKnownKeysGrowsTheTableOnlyForItsNewOnes() {
        final ExactKeyTable table = new ExactKeyTable();
        final int held = 6_000;
        for (int i = 0; i < held; i++) {
            table.put(i, i);
        }
        final long capacity = table.capacity();
        assertTrue(4 * (held + 100) <= 3 * capacity && 4 * (held + 200) > 3 * capacity,
                "the test's sizes straddle the limit of " + capacity + " slots");
        final long[] batch = new long[held + 100];
        for (int i = 0; i < batch.length; i++) {
            batch[i] = i; // every held key, and 100 new ones
        }
        table.reserveFor(batch, batch.length, 2, ExactKeyTableTest::allAtOnce);
        assertEquals(capacity, table.capacity(), "100 new keys fit");
        final long[] more = Arrays.copyOf(batch, held + 200);
        for (int i = held + 100; i < more.length; i++) {
            more[i] = i;
        }
        table.reserveFor(more, more.length, 2, ExactKeyTableTest::allAtOnce);
        assertEquals(2 * capacity, table.capacity(), "200 new keys do not");
        assertEquals(held, table.size(), "counting changes nothing");
    }

    /**
     * Batches whose share of new keys ranges from none to all, into tables near their limit: each reservation grows
     * the table exactly as far as a count of its new keys says, whether the sample decides or the count, and the
     * batch then goes in without growing.
     */
    @ParameterizedTest(name = "new keys: {0} of a batch")
    @CsvSource({"0.0", "0.01", "0.25", "0.5", "0.9", "0.97", "1.0"})
    void aBatchGrowsTheTableAsFarAsItsNewKeysNeed(double freshShare) {
        final SplittableRandom random = new SplittableRandom(Double.doubleToLongBits(freshShare));
        for (int round = 0; round < 40; round++) {
            final int held = 1_000 + random.nextInt(120_000);
            // at most half the held keys, so that a batch of mostly known ones finds enough
            final int n = 1 + random.nextInt(Math.min(held / 2, round % 2 == 0 ? 2_000 : 200_000));
            final ExactKeyTable table = new ExactKeyTable(1);
            final ExactKeyTable counted = new ExactKeyTable(1);
            final long[] heldKeys = new long[held];
            for (int i = 0; i < held; i++) {
                heldKeys[i] = random.nextLong();
                table.put(heldKeys[i], i);
                counted.put(heldKeys[i], i);
            }
            final java.util.Set<Long> chosen = new java.util.HashSet<>();
            final long[] batch = new long[n];
            long fresh = 0;
            for (int i = 0; i < n; ) {
                final boolean isNew = random.nextDouble() < freshShare;
                final long key = isNew ? random.nextLong() : heldKeys[random.nextInt(held)];
                if (chosen.add(key)) {
                    batch[i++] = key;
                    if (table.get(key) == NOT_FOUND) {
                        fresh++;
                    }
                }
            }
            Arrays.sort(batch);
            counted.reserve(fresh, 1, ExactKeyTableTest::oneAfterAnother);
            table.reserveFor(batch, n, 3, ExactKeyTableTest::allAtOnce);
            final String what = "round " + round + ": " + held + " held, " + n + " in the batch, " + fresh + " new";
            assertEquals(counted.capacity(), table.capacity(), what);
            assertEquals(held, table.size(), what);
            table.putAll(batch, batch, n, 3, ExactKeyTableTest::allAtOnce);
            assertEquals(counted.capacity(), table.capacity(), "the batch went in without growing; " + what);
            assertEquals(held + fresh, table.size(), what);
        }
    }

    @Test
    void aReservationGrowsOnceForTheWholeBatch() {
        final ExactKeyTable table = new ExactKeyTable();
        table.reserve(10_000, 1, ExactKeyTableTest::oneAfterAnother);
        final long capacity = table.capacity();
        for (int i = 0; i < 10_000; i++) {
            table.put(i, i);
        }
        assertEquals(capacity, table.capacity());
        table.clear(0, 1, ExactKeyTableTest::oneAfterAnother);
        assertEquals(0, table.size());
        assertEquals(NOT_FOUND, table.get(5));
    }

    @Test
    void aClearInPartsEmptiesEverySlotOfATableSizedForTheKeys() {
        final ExactKeyTable table = new ExactKeyTable();
        for (int i = 0; i < 50_000; i++) {
            table.put(i, i);
        }
        table.clear(300_000, 5, ExactKeyTableTest::allAtOnce);
        assertEquals(0, table.size());
        assertTrue(4 * 300_000 <= 3 * table.capacity() && 300_000 > 3 * table.capacity() / 8,
                "sized for the keys: " + table.capacity());
        for (int i = 0; i < 50_000; i++) {
            assertEquals(NOT_FOUND, table.get(i), "key " + i);
        }
        final long capacity = table.capacity();
        for (int i = 0; i < 300_000; i++) {
            table.put(-i, i);
        }
        assertEquals(capacity, table.capacity(), "300,000 keys went in without growing");
        assertEquals(299_999, table.get(-299_999));
    }

    @ParameterizedTest(name = "{0} parts, at once: {1}")
    @CsvSource({"2, false", "7, false", "4, true", "16, true"})
    void batchesWrittenInPartsAndGrowthsInPartsKeepEveryKey(int parts, boolean atOnce) {
        final ExactKeyTable.Parts runner = atOnce ? ExactKeyTableTest::allAtOnce : ExactKeyTableTest::oneAfterAnother;
        final SplittableRandom random = new SplittableRandom(parts);
        final ExactKeyTable table = new ExactKeyTable();
        final Map<Long, Long> oracle = new HashMap<>();
        final long[] universe = new long[600_000];
        for (int i = 0; i < universe.length; i++) {
            universe[i] = i < EDGE_KEYS.length ? EDGE_KEYS[i] : random.nextLong();
        }
        for (int batch = 0; batch < 6; batch++) {
            // Unique keys: a slice of the universe, half of them already held after the first batch.
            final int n = 70_000 + random.nextInt(80_000);
            final int start = batch * 60_000;
            final long[] keys = Arrays.copyOfRange(universe, start, start + n);
            final long[] values = new long[n];
            long added = 0;
            for (int i = 0; i < n; i++) {
                values[i] = random.nextLong(Long.MIN_VALUE + 1, Long.MAX_VALUE);
                if (oracle.put(keys[i], values[i]) == null) {
                    added++;
                }
            }
            table.reserve(added, parts, runner);
            table.putAll(keys, values, n, parts, runner);
            assertEquals(oracle.size(), table.size(), "size after batch " + batch);
            assertTrue(4 * table.size() <= 3 * table.capacity());
            for (Map.Entry<Long, Long> e : oracle.entrySet()) {
                assertEquals(e.getValue(), table.get(e.getKey()), "key " + e.getKey() + " after batch " + batch);
            }
        }
        for (long key : Arrays.copyOf(universe, 1000)) {
            if (!oracle.containsKey(key)) {
                assertEquals(NOT_FOUND, table.get(key));
            }
        }
    }

    @ParameterizedTest(name = "{0} parts, at once: {1}")
    @CsvSource({"2, false", "5, false", "4, true", "16, true"})
    void batchesRemovedInPartsKeepEveryOtherKeyReachable(int parts, boolean atOnce) {
        final ExactKeyTable.Parts runner = atOnce ? ExactKeyTableTest::allAtOnce : ExactKeyTableTest::oneAfterAnother;
        final SplittableRandom random = new SplittableRandom(100 + parts);
        final ExactKeyTable table = new ExactKeyTable(1);
        final Map<Long, Long> oracle = new HashMap<>();
        // a table about three quarters full, so that runs of taken slots cross the parts' ranges
        final int held = 150_000;
        final long[] universe = new long[held + 20_000];
        for (int i = 0; i < universe.length; i++) {
            universe[i] = i < EDGE_KEYS.length ? EDGE_KEYS[i] : random.nextLong();
        }
        for (int i = 0; i < held; i++) {
            table.put(universe[i], i + 1);
            oracle.put(universe[i], (long) i + 1);
        }
        for (int batch = 0; batch < 4; batch++) {
            // unique keys: held ones and some never held
            final int n = 1 + random.nextInt(30_000);
            final long[] keys = new long[n];
            final java.util.Set<Long> chosen = new java.util.HashSet<>();
            for (int i = 0; i < n; ) {
                final long key = universe[random.nextInt(universe.length)];
                if (chosen.add(key)) {
                    keys[i++] = key;
                }
            }
            for (long key : keys) {
                oracle.remove(key);
            }
            table.removeAll(keys, n, parts, runner);
            assertEquals(oracle.size(), table.size(), "size after batch " + batch);
            for (long key : universe) {
                final Long v = oracle.get(key);
                assertEquals(v == null ? NOT_FOUND : v, table.get(key), "key " + key + " after batch " + batch);
            }
        }
    }

    @Test
    void aGrowthOfSeveralDoublingsAtOnceKeepsEveryKey() {
        final ExactKeyTable table = new ExactKeyTable();
        final int n = 100_000;
        for (int i = 0; i < n; i++) {
            table.put(i, i + 1);
        }
        final long before = table.capacity();
        table.reserve(16L * n, 4, ExactKeyTableTest::allAtOnce);
        assertTrue(table.capacity() >= 16 * before, "grew by four doublings or more: " + table.capacity());
        assertEquals(n, table.size());
        for (int i = 0; i < n; i++) {
            assertEquals(i + 1, table.get(i));
        }
    }

    private static void oneAfterAnother(int parts, IntConsumer body) {
        for (int p = 0; p < parts; p++) {
            body.accept(p);
        }
    }

    private static void allAtOnce(int parts, IntConsumer body) {
        IntStream.range(0, parts).parallel().forEach(body);
    }

    private static List<Long> keysWithHome(ExactKeyTable table, long slot, int count) {
        final List<Long> keys = new ArrayList<>();
        for (long key = 1; keys.size() < count; key++) {
            if (table.homeSlot(key) == slot) {
                keys.add(key);
            }
        }
        return keys;
    }
}
