package io.flix.index.batch;

import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;
import io.flix.index.SortedPairs;
import io.flix.index.TreeMapOracle;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import static io.flix.index.FlixIndex.NOT_FOUND;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The micro-batch engine against the sequential oracle: every operation of a batch is also run one at a time on a
 * {@link TreeMapOracle}, and every result and the final contents must match. The index under test comes from
 * {@link #openIndex()}; a backend's variant of this suite subclasses it and opens that backend, e.g.
 * <pre>{@code
 * class CpuMicroBatchEngineTest extends MicroBatchEngineTest {
 *     protected FlixIndex openIndex() {
 *         return FlixIndex.open(FlixConfig.builder().backend(Backend.CPU).build());
 *     }
 * }
 * }</pre>
 * Every batch is also run through a call-counting wrapper: at most one sorted, non-empty bulk call per kind
 * (ranges: one per limit group), none for an empty batch.
 */
class MicroBatchEngineTest {

    private static final long[] EXTREME_KEYS = {Long.MIN_VALUE, Long.MIN_VALUE + 1, Long.MAX_VALUE - 1, Long.MAX_VALUE};
    private static final AtomicLong RANDOM_OPS = new AtomicLong();
    private static final AtomicLong RANDOM_BATCHES = new AtomicLong();

    /** The index the engine runs on. Subclasses open a real backend here. */
    protected FlixIndex openIndex() {
        return new TreeMapOracle();
    }

    @AfterAll
    static void reportOps() {
        if (RANDOM_OPS.get() > 0) {
            System.out.println("micro-batch engine: " + RANDOM_OPS.getAndSet(0) + " randomized operations in "
                    + RANDOM_BATCHES.getAndSet(0) + " batches compared with the sequential oracle");
        }
    }

    // ------------------------------------------------------------------------------------------------------------
    // Randomized differential suite

    /** Relative weights of the operation kinds and the key distribution of one randomized workload. */
    record Mix(String name, int upsert, int delete, int get, int ceiling, int floor, int range, long domain,
               double extremeRate, int maxLimit, boolean wide) {
        int total() {
            return upsert + delete + get + ceiling + floor + range;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static final List<Mix> MIXES = List.of(
            new Mix("mostly-gets", 30, 10, 60, 1, 1, 1, 30, 0.02, 4, false),
            new Mix("ordered-heavy", 20, 20, 10, 20, 20, 10, 20, 0.05, 5, false),
            new Mix("delete-chains", 10, 40, 5, 15, 15, 15, 40, 0.05, 6, false),
            new Mix("range-heavy", 25, 25, 0, 0, 0, 50, 16, 0.05, 4, false),
            new Mix("updates-only", 50, 50, 0, 0, 0, 0, 25, 0.05, 1, false),
            new Mix("upserts-only", 100, 0, 0, 0, 0, 0, 25, 0.05, 1, false),
            new Mix("deletes-only", 0, 100, 0, 0, 0, 0, 25, 0.05, 1, false),
            new Mix("updates-and-gets", 35, 25, 40, 0, 0, 0, 12, 0.05, 1, false),
            new Mix("lookups-only", 0, 0, 25, 25, 25, 25, 25, 0.05, 5, false),
            new Mix("tiny-domain", 20, 20, 15, 15, 15, 15, 3, 0.3, 3, false),
            new Mix("extremes", 20, 20, 15, 15, 15, 15, 1, 0.6, 3, false),
            new Mix("wide-keys", 25, 15, 20, 15, 15, 10, 0, 0.05, 8, true));

    static Stream<Arguments> mixesAndSeeds() {
        final List<Arguments> cases = new ArrayList<>();
        for (Mix mix : MIXES) {
            for (long seed : new long[] {1, 20261121, 0x5eedL}) {
                for (MicroBatchEngine.Sorting sorting : MicroBatchEngine.Sorting.values()) {
                    cases.add(Arguments.of(mix, seed, sorting));
                }
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} seed {1} {2}")
    @MethodSource("mixesAndSeeds")
    void randomBatchesMatchSequentialExecution(Mix mix, long seed, MicroBatchEngine.Sorting sorting) {
        final SplittableRandom random = new SplittableRandom(seed * 31 + mix.name().hashCode());
        final KeySource keySource = new KeySource(mix, random);
        final TreeMapOracle oracle = new TreeMapOracle();
        final CountingIndex index = new CountingIndex(openIndex());
        try {
            buildBoth(oracle, index, keySource, random, (int) Math.min(2000, 2 * mix.domain() + 8));
            final MicroBatchEngine engine = new MicroBatchEngine(index, sorting);
            final OperationBatch batch = new OperationBatch(0);
            final int targetOps = 6000;
            int ops = 0;
            int batchNumber = 0;
            while (ops < targetOps) {
                batch.clear();
                final int size = batchSize(random);
                for (int i = 0; i < size; i++) {
                    addRandomOp(batch, mix, keySource, random);
                }
                executeAndCompare(index, engine, oracle, batch,
                        mix + " seed " + seed + " " + sorting + " batch " + batchNumber);
                ops += size;
                batchNumber++;
            }
            RANDOM_OPS.addAndGet(ops);
            RANDOM_BATCHES.addAndGet(batchNumber);
        } finally {
            index.close();
        }
    }

    /** With ordered lookups (the sort's path either way), and of gets and updates only (the overlay's path). */
    @ParameterizedTest
    @EnumSource(MicroBatchEngine.Sorting.class)
    void oneVeryLargeMixedBatchMatchesSequentialExecution(MicroBatchEngine.Sorting sorting) {
        for (Mix mix : List.of(new Mix("large", 25, 15, 25, 12, 12, 11, 3000, 0.01, 6, false),
                new Mix("large-exact", 30, 15, 55, 0, 0, 0, 3000, 0.01, 1, false))) {
            oneVeryLargeBatch(mix, sorting);
        }
    }

    private void oneVeryLargeBatch(Mix mix, MicroBatchEngine.Sorting sorting) {
        final SplittableRandom random = new SplittableRandom(99);
        final KeySource keySource = new KeySource(mix, random);
        final TreeMapOracle oracle = new TreeMapOracle();
        final CountingIndex index = new CountingIndex(openIndex());
        try {
            buildBoth(oracle, index, keySource, random, 4000);
            final OperationBatch batch = new OperationBatch();
            for (int i = 0; i < 60_000; i++) {
                addRandomOp(batch, mix, keySource, random);
            }
            executeAndCompare(index, new MicroBatchEngine(index, sorting), oracle, batch,
                    mix + " " + sorting + ": one batch of 60000");
            RANDOM_OPS.addAndGet(batch.size());
            RANDOM_BATCHES.incrementAndGet();
        } finally {
            index.close();
        }
    }

    /** Sizes 0 and 1 often, small and medium mostly, large (radix sort, many repeats) sometimes. */
    private static int batchSize(SplittableRandom random) {
        final int pick = random.nextInt(100);
        if (pick < 5) {
            return 0;
        }
        if (pick < 15) {
            return 1;
        }
        if (pick < 50) {
            return 2 + random.nextInt(19);
        }
        if (pick < 92) {
            return 21 + random.nextInt(280);
        }
        return 1000 + random.nextInt(2000);
    }

    private static void addRandomOp(OperationBatch batch, Mix mix, KeySource keys, SplittableRandom random) {
        int pick = random.nextInt(mix.total());
        if ((pick -= mix.upsert()) < 0) {
            batch.upsert(keys.next(), randomValue(random));
        } else if ((pick -= mix.delete()) < 0) {
            batch.delete(keys.next());
        } else if ((pick -= mix.get()) < 0) {
            batch.get(keys.next());
        } else if ((pick -= mix.ceiling()) < 0) {
            batch.ceiling(keys.next());
        } else if ((pick -= mix.floor()) < 0) {
            batch.floor(keys.next());
        } else {
            long lo = keys.next();
            long hi = random.nextInt(8) == 0 ? lo : keys.next();
            if (lo > hi) {
                final long t = lo;
                lo = hi;
                hi = t;
            }
            final int kind = random.nextInt(20);
            final int limit = kind < 6 ? 1 : kind == 6 ? Integer.MAX_VALUE : 1 + random.nextInt(mix.maxLimit());
            batch.range(lo, hi, limit);
        }
    }

    private static long randomValue(SplittableRandom random) {
        if (random.nextInt(4) == 0) {
            return random.nextInt(1000); // small values repeat, so a stale value can match by accident only rarely
        }
        long v;
        do {
            v = random.nextLong();
        } while (v == NOT_FOUND);
        return v;
    }

    /** Keys from a small domain plus the extremes, or (wide) random longs that often repeat a recent key. */
    private static final class KeySource {
        private final Mix mix;
        private final SplittableRandom random;
        private final long[] recent = new long[64];
        private int recentCount;

        KeySource(Mix mix, SplittableRandom random) {
            this.mix = mix;
            this.random = random;
        }

        long next() {
            if (random.nextDouble() < mix.extremeRate()) {
                return EXTREME_KEYS[random.nextInt(EXTREME_KEYS.length)];
            }
            if (!mix.wide()) {
                return random.nextLong(-mix.domain(), mix.domain() + 1);
            }
            if (recentCount > 0 && random.nextBoolean()) {
                final long base = recent[random.nextInt(Math.min(recentCount, recent.length))];
                return random.nextInt(4) == 0 ? base + random.nextInt(-2, 3) : base; // neighbours too
            }
            final long key = random.nextLong();
            recent[recentCount++ % recent.length] = key;
            return key;
        }
    }

    private static void buildBoth(TreeMapOracle oracle, CountingIndex index, KeySource keys, SplittableRandom random,
                                  int n) {
        final long[] k = new long[n];
        final long[] v = new long[n];
        for (int i = 0; i < n; i++) {
            k[i] = keys.next();
            v[i] = randomValue(random);
        }
        oracle.build(k, v, n);
        index.build(k, v, n);
        index.reset();
    }

    // ------------------------------------------------------------------------------------------------------------
    // The comparison

    /**
     * Executes the batch with the engine, then runs it one operation at a time on the oracle, comparing every
     * result, the final contents, and the bulk calls the engine made.
     */
    static BatchResults executeAndCompare(CountingIndex index, MicroBatchEngine engine, TreeMapOracle oracle,
                                          OperationBatch batch, String context) {
        index.reset();
        final BatchResults results = engine.execute(batch);
        assertEquals(batch.size(), results.size(), context + ": results size");
        final long[] one = new long[1];
        final long[] oneValue = new long[1];
        final long[] outKey = new long[1];
        final long[] outValue = new long[1];
        for (int position = 0; position < batch.size(); position++) {
            final int i = position;
            final byte kind = batch.kind(i);
            assertEquals(kind, results.kind(i), context);
            one[0] = batch.key(i);
            switch (kind) {
                case OperationBatch.UPSERT -> {
                    oneValue[0] = batch.value(i);
                    oracle.upsert(one, oneValue, 1);
                }
                case OperationBatch.DELETE -> oracle.delete(one, 1);
                case OperationBatch.GET -> assertEquals(oracle.get(one[0]), results.value(i),
                        () -> context + ": " + describe(batch, i));
                case OperationBatch.CEILING, OperationBatch.FLOOR -> {
                    if (kind == OperationBatch.CEILING) {
                        oracle.ceiling(one, 1, outKey, outValue);
                    } else {
                        oracle.floor(one, 1, outKey, outValue);
                    }
                    assertEquals(outKey[0], results.key(i), () -> context + ": key of " + describe(batch, i));
                    assertEquals(outValue[0], results.value(i), () -> context + ": value of " + describe(batch, i));
                }
                case OperationBatch.RANGE -> {
                    final RangeResult expected = oracle.range(one, new long[] {batch.hi(i)}, 1, batch.limit(i));
                    final int count = expected.count(0);
                    assertEquals(count, results.rangeCount(i), () -> context + ": count of " + describe(batch, i));
                    final int start = results.rangeStart(i);
                    for (int j = 0; j < count; j++) {
                        final int at = j;
                        assertEquals(expected.keys()[at], results.rangeKey(start + at),
                                () -> context + ": pair " + at + " key of " + describe(batch, i));
                        assertEquals(expected.values()[at], results.rangeValue(start + at),
                                () -> context + ": pair " + at + " value of " + describe(batch, i));
                    }
                }
                default -> fail("unknown kind " + kind);
            }
        }
        assertSameContents(oracle, index, context);
        assertCallBounds(index, engine, batch, context);
        return results;
    }

    static void assertSameContents(TreeMapOracle oracle, FlixIndex index, String context) {
        final SortedPairs expected = oracle.export();
        final SortedPairs actual = index.export();
        assertEquals(expected.size(), actual.size(), context + ": final size");
        assertArrayEquals(Arrays.copyOf(expected.keys(), expected.size()),
                Arrays.copyOf(actual.keys(), actual.size()), context + ": final keys");
        assertArrayEquals(Arrays.copyOf(expected.values(), expected.size()),
                Arrays.copyOf(actual.values(), actual.size()), context + ": final values");
    }

    /**
     * At most one bulk call per kind (ranges: one per limit group), none empty, none for an absent kind; sorted,
     * but for a batch of one kind, or one without ordered lookups where the index sorts.
     */
    private static void assertCallBounds(CountingIndex index, MicroBatchEngine engine, OperationBatch batch,
                                         String context) {
        final boolean indexSorts = engine.sorting() == MicroBatchEngine.Sorting.INDEX_SORT;
        final boolean oneLookupKind = batch.count(OperationBatch.GET) == batch.size()
                || batch.count(OperationBatch.CEILING) == batch.size()
                || batch.count(OperationBatch.FLOOR) == batch.size();
        final boolean oneKind = batch.count(OperationBatch.UPSERT) == batch.size()
                || batch.count(OperationBatch.DELETE) == batch.size()
                || (oneLookupKind && indexSorts);
        final boolean ordered = batch.count(OperationBatch.CEILING) + batch.count(OperationBatch.FLOOR)
                + batch.count(OperationBatch.RANGE) > 0;
        if (batch.isEmpty()) {
            assertEquals(0, index.total(), context + ": an empty batch calls the index");
        } else if (oneKind) {
            assertEquals(1, index.unsortedCalls, context + ": a batch of one kind goes to the index unsorted, whole");
        } else if (indexSorts && !ordered) {
            assertEquals(index.total(), index.unsortedCalls, context
                    + ": every call of a batch of gets and updates goes unsorted where the index sorts");
            assertTrue(index.getKeys <= batch.count(OperationBatch.GET), context + ": keys read " + index.getKeys);
        } else {
            assertEquals(0, index.unsortedCalls, context + ": calls without keysSorted (only a batch of one kind,"
                    + " or of gets and updates where the index sorts, goes unsorted)");
        }
        assertEquals(0, index.emptyCalls, context + ": a call with n == 0");
        assertTrue(index.gets <= 1, context + ": get calls " + index.gets);
        assertTrue(index.upserts <= (batch.count(OperationBatch.UPSERT) > 0 ? 1 : 0),
                context + ": upsert calls " + index.upserts);
        assertTrue(index.deletes <= (batch.count(OperationBatch.DELETE) > 0 ? 1 : 0),
                context + ": delete calls " + index.deletes);
        assertTrue(index.ceilings <= (batch.count(OperationBatch.CEILING) > 0 ? 1 : 0),
                context + ": ceiling calls " + index.ceilings);
        assertTrue(index.floors <= (batch.count(OperationBatch.FLOOR) > 0 ? 1 : 0),
                context + ": floor calls " + index.floors);
        assertTrue(index.ranges <= Math.min(32, batch.count(OperationBatch.RANGE)),
                context + ": range calls " + index.ranges);
        assertEquals(0, index.builds, context + ": build calls");
    }

    static String describe(OperationBatch batch, int i) {
        final byte kind = batch.kind(i);
        final String head = "op " + i + " of " + batch.size() + ": " + OperationBatch.kindName(kind) + "(";
        return switch (kind) {
            case OperationBatch.UPSERT -> head + batch.key(i) + ", " + batch.value(i) + ")";
            case OperationBatch.RANGE -> head + batch.key(i) + ", " + batch.hi(i) + ", limit " + batch.limit(i) + ")";
            default -> head + batch.key(i) + ")";
        } + " in " + dump(batch);
    }

    private static String dump(OperationBatch batch) {
        if (batch.size() > 40) {
            return "a batch of " + batch.size();
        }
        final StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < batch.size(); i++) {
            if (i > 0) {
                out.append(", ");
            }
            out.append(OperationBatch.kindName(batch.kind(i))).append(' ').append(batch.key(i));
            if (batch.kind(i) == OperationBatch.UPSERT) {
                out.append('=').append(batch.value(i));
            } else if (batch.kind(i) == OperationBatch.RANGE) {
                out.append("..").append(batch.hi(i)).append(" limit ").append(batch.limit(i));
            }
        }
        return out.append(']').toString();
    }

    // ------------------------------------------------------------------------------------------------------------
    // Focused cases: each is checked against the oracle and against its named expectation

    /** An oracle and an index under test with the same contents, and an engine on the index. */
    private final class Fixture implements AutoCloseable {
        final TreeMapOracle oracle = new TreeMapOracle();
        final CountingIndex index = new CountingIndex(openIndex());
        final MicroBatchEngine engine = new MicroBatchEngine(index);
        final OperationBatch batch = new OperationBatch();

        Fixture(long... keyValuePairs) {
            final int n = keyValuePairs.length / 2;
            final long[] keys = new long[n];
            final long[] values = new long[n];
            for (int i = 0; i < n; i++) {
                keys[i] = keyValuePairs[2 * i];
                values[i] = keyValuePairs[2 * i + 1];
            }
            oracle.build(keys, values, n);
            index.build(keys, values, n);
        }

        BatchResults run(String context) {
            final BatchResults results = executeAndCompare(index, engine, oracle, batch, context);
            batch.clear();
            return results;
        }

        @Override
        public void close() {
            index.close();
        }
    }

    @Test
    void getBeforeTheFirstUpdateReadsThePreBatchValue() {
        try (Fixture f = new Fixture(5, 50)) {
            final int before = f.batch.get(5);
            f.batch.upsert(5, 51);
            final int after = f.batch.get(5);
            final BatchResults r = f.run("get-upsert-get");
            assertEquals(50, r.value(before));
            assertEquals(51, r.value(after));
        }
    }

    /**
     * Where the index sorts, a batch of gets and updates reads the index only for the gets of keys it has not
     * updated before them, and writes its net effect unsorted; the engine's default on the CPU backend.
     */
    @Test
    void aGetOfAKeyUpdatedEarlierInTheBatchDoesNotReadTheIndex() {
        try (Fixture f = new Fixture(1, 10, 2, 20)) {
            assertEquals(MicroBatchEngine.Sorting.INDEX_SORT, f.engine.sorting());
            final int first = f.batch.get(1);
            f.batch.upsert(1, 11);
            final int afterUpsert = f.batch.get(1);
            f.batch.delete(2);
            final int afterDelete = f.batch.get(2);
            final int notUpdatedYet = f.batch.get(3);
            f.batch.upsert(3, 33);
            f.batch.upsert(1, 12);
            final BatchResults r = f.run("overlay");
            assertEquals(10, r.value(first));
            assertEquals(11, r.value(afterUpsert));
            assertEquals(NOT_FOUND, r.value(afterDelete));
            assertEquals(NOT_FOUND, r.value(notUpdatedYet));
            assertEquals(1, f.index.gets);
            assertEquals(2, f.index.getKeys, "only the gets before their key's first update read the index");
            assertEquals(1, f.index.upserts);
            assertEquals(1, f.index.deletes);
            assertEquals(3, f.index.unsortedCalls);
            assertArrayEquals(new long[] {1, 3}, Arrays.copyOf(f.index.export().keys(), 2));
            assertArrayEquals(new long[] {12, 33}, Arrays.copyOf(f.index.export().values(), 2));
        }
    }

    @Test
    void getAfterDeleteReadsNotFoundAndAfterReinsertReadsTheNewValue() {
        try (Fixture f = new Fixture(5, 50)) {
            f.batch.delete(5);
            final int afterDelete = f.batch.get(5);
            f.batch.upsert(5, 52);
            final int afterUpsert = f.batch.get(5);
            final BatchResults r = f.run("delete-get-upsert-get");
            assertEquals(NOT_FOUND, r.value(afterDelete));
            assertFalse(r.found(afterDelete));
            assertEquals(52, r.value(afterUpsert));
            assertEquals(52, f.index.export().values()[0]);
        }
    }

    @Test
    void upsertUpsertGetReadsTheLastValueAndOnlyTheNetEffectIsWritten() {
        try (Fixture f = new Fixture()) {
            f.batch.upsert(7, 1);
            f.batch.upsert(7, 2);
            final int get = f.batch.get(7);
            f.batch.upsert(7, 3);
            final BatchResults r = f.run("upsert-upsert-get-upsert");
            assertEquals(2, r.value(get));
            assertEquals(1, f.index.upserts);
            assertEquals(0, f.index.gets, "no get reads the pre-batch index here");
            assertEquals(3, f.index.export().values()[0]);
        }
    }

    @Test
    void deleteOfAnAbsentKeyIsANoOp() {
        try (Fixture f = new Fixture(1, 10)) {
            f.batch.delete(2);
            final int get = f.batch.get(2);
            final int get1 = f.batch.get(1);
            final BatchResults r = f.run("delete absent");
            assertEquals(NOT_FOUND, r.value(get));
            assertEquals(10, r.value(get1));
            assertEquals(1, f.index.size());
        }
    }

    @Test
    void floorSeesAnEarlierUpsertOfASmallerKeyInTheSameBatch() {
        try (Fixture f = new Fixture(10, 100)) {
            final int before = f.batch.floor(7);
            f.batch.upsert(5, 50);
            final int after = f.batch.floor(7);
            final BatchResults r = f.run("floor-upsert-floor");
            assertEquals(NOT_FOUND, r.value(before));
            assertEquals(0, r.key(before));
            assertEquals(5, r.key(after));
            assertEquals(50, r.value(after));
        }
    }

    @Test
    void ceilingSkipsAKeyDeletedEarlierInTheBatch() {
        try (Fixture f = new Fixture(10, 100, 20, 200)) {
            final int before = f.batch.ceiling(5);
            f.batch.delete(10);
            final int after = f.batch.ceiling(5);
            final BatchResults r = f.run("ceiling-delete-ceiling");
            assertEquals(10, r.key(before));
            assertEquals(100, r.value(before));
            assertEquals(20, r.key(after));
            assertEquals(200, r.value(after));
        }
    }

    @Test
    void ceilingAndFloorSkipALongChainOfDeletedKeys() {
        final long[] pairs = new long[2 * 100];
        for (int i = 0; i < 100; i++) {
            pairs[2 * i] = i * 3L;
            pairs[2 * i + 1] = 1000 + i;
        }
        try (Fixture f = new Fixture(pairs)) {
            for (int i = 1; i < 99; i++) {
                f.batch.delete(i * 3L);
            }
            final int ceiling = f.batch.ceiling(1);
            final int floor = f.batch.floor(296);
            final int empty = f.batch.range(1, 296, 1);
            final int middle = f.batch.range(1, 297, 1);
            final BatchResults r = f.run("deleted chain");
            assertEquals(297, r.key(ceiling));
            assertEquals(1099, r.value(ceiling));
            assertEquals(0, r.key(floor));
            assertEquals(1000, r.value(floor));
            assertEquals(0, r.rangeCount(empty));
            assertEquals(1, r.rangeCount(middle));
            assertEquals(297, r.rangeKey(r.rangeStart(middle)));
        }
    }

    @Test
    void aKeyUpsertedEarlierInTheBatchIsACloserCeilingThanThePreBatchOne() {
        try (Fixture f = new Fixture(10, 100)) {
            f.batch.upsert(8, 80);
            final int ceiling = f.batch.ceiling(5);
            f.batch.delete(8);
            final int again = f.batch.ceiling(5);
            final BatchResults r = f.run("upsert-ceiling-delete-ceiling");
            assertEquals(8, r.key(ceiling));
            assertEquals(80, r.value(ceiling));
            assertEquals(10, r.key(again));
        }
    }

    @Test
    void anOrderedLookupOfAKeyUpsertedInTheBatchReturnsTheNewValue() {
        try (Fixture f = new Fixture(10, 100, 20, 200)) {
            f.batch.upsert(10, 101);
            final int ceiling = f.batch.ceiling(5);
            final int floor = f.batch.floor(15);
            final int range = f.batch.range(10, 10, 1);
            final BatchResults r = f.run("upsert existing then ordered lookups");
            assertEquals(10, r.key(ceiling));
            assertEquals(101, r.value(ceiling));
            assertEquals(101, r.value(floor));
            assertEquals(101, r.rangeValue(r.rangeStart(range)));
        }
    }

    @Test
    void updatingExistingKeysAddsNoWorkToOrderedLookups() {
        final long[] pairs = new long[2 * 1000];
        for (int i = 0; i < 1000; i++) {
            pairs[2 * i] = i;
            pairs[2 * i + 1] = i;
        }
        try (Fixture f = new Fixture(pairs)) {
            for (int i = 0; i < 1000; i++) {
                f.batch.upsert(i, 5000 + i);
                if (i % 100 == 0) {
                    f.batch.ceiling(i);
                    f.batch.floor(i);
                    f.batch.range(0, 999, 1);
                }
            }
            f.run("updates of existing keys");
            assertEquals(10, f.index.ceilingKeys, "ceiling keys asked");
            assertEquals(10, f.index.floorKeys, "floor keys asked");
            assertEquals(1, f.index.largestRangeLimit, "range limit asked");
        }
    }

    @Test
    void aLookupBeforeAnUpdateDoesNotSeeIt() {
        try (Fixture f = new Fixture(10, 100)) {
            final int ceiling = f.batch.ceiling(10);
            final int range = f.batch.range(0, 20, 5);
            f.batch.upsert(10, 101);
            f.batch.upsert(11, 110);
            final int rangeAfter = f.batch.range(0, 20, 5);
            final BatchResults r = f.run("lookups around updates");
            assertEquals(100, r.value(ceiling));
            assertEquals(1, r.rangeCount(range));
            assertEquals(100, r.rangeValue(r.rangeStart(range)));
            assertEquals(2, r.rangeCount(rangeAfter));
            assertEquals(101, r.rangeValue(r.rangeStart(rangeAfter)));
            assertEquals(11, r.rangeKey(r.rangeStart(rangeAfter) + 1));
        }
    }

    @Test
    void rangeWithLimitOneMergesBatchKeysAndPreBatchKeys() {
        try (Fixture f = new Fixture(2, 20, 4, 40, 6, 60)) {
            f.batch.delete(2);
            final int first = f.batch.range(Long.MIN_VALUE, Long.MAX_VALUE, 1);
            f.batch.upsert(3, 30);
            final int second = f.batch.range(Long.MIN_VALUE, Long.MAX_VALUE, 1);
            final int all = f.batch.range(Long.MIN_VALUE, Long.MAX_VALUE, Integer.MAX_VALUE);
            final BatchResults r = f.run("limit one");
            assertEquals(4, r.rangeKey(r.rangeStart(first)));
            assertEquals(3, r.rangeKey(r.rangeStart(second)));
            assertEquals(3, r.rangeCount(all));
        }
    }

    @Test
    void extremeKeysAreOrdinaryKeys() {
        try (Fixture f = new Fixture(Long.MAX_VALUE, 1, Long.MIN_VALUE, 2)) {
            final int ceilingOfMax = f.batch.ceiling(Long.MAX_VALUE);
            final int floorOfMin = f.batch.floor(Long.MIN_VALUE);
            f.batch.delete(Long.MAX_VALUE);
            final int ceilingAfterDelete = f.batch.ceiling(Long.MAX_VALUE);
            final int floorOfMax = f.batch.floor(Long.MAX_VALUE);
            f.batch.delete(Long.MIN_VALUE);
            final int floorAfterDelete = f.batch.floor(Long.MAX_VALUE);
            f.batch.upsert(Long.MAX_VALUE, 3);
            final int whole = f.batch.range(Long.MIN_VALUE, Long.MAX_VALUE, 10);
            final int getMin = f.batch.get(Long.MIN_VALUE);
            final BatchResults r = f.run("extremes");
            assertEquals(Long.MAX_VALUE, r.key(ceilingOfMax));
            assertEquals(Long.MIN_VALUE, r.key(floorOfMin));
            assertFalse(r.found(ceilingAfterDelete));
            assertEquals(Long.MIN_VALUE, r.key(floorOfMax));
            assertFalse(r.found(floorAfterDelete));
            assertEquals(1, r.rangeCount(whole));
            assertEquals(NOT_FOUND, r.value(getMin));
        }
    }

    @Test
    void theEngineAndItsResultsAreReusableAcrossBatchesOfShrinkingSize() {
        try (Fixture f = new Fixture(1, 10, 2, 20, 3, 30)) {
            for (int i = 0; i < 500; i++) {
                f.batch.upsert(i % 7, i + 1);
                f.batch.range(0, 5, 3);
                f.batch.ceiling(i % 9);
            }
            f.run("large");
            f.batch.get(3);
            f.batch.floor(100);
            final BatchResults r = f.run("small");
            assertEquals(2, r.size());
            f.run("empty");
            assertEquals(0, f.index.total());
        }
    }

    @Test
    void anEmptyBatchMakesNoIndexCall() {
        try (Fixture f = new Fixture(1, 10)) {
            final BatchResults r = f.run("empty");
            assertEquals(0, r.size());
            assertEquals(0, f.index.total());
        }
    }

    @Test
    void updatesAndGetsOnlyMakeOneBulkCallPerKind() {
        final SplittableRandom random = new SplittableRandom(42);
        try (Fixture f = new Fixture(1, 10, 2, 20, 3, 30)) {
            for (int round = 0; round < 20; round++) {
                for (int i = 0; i < 3000; i++) {
                    final long key = random.nextInt(-50, 50);
                    switch (random.nextInt(3)) {
                        case 0 -> f.batch.upsert(key, random.nextInt(1, 1000));
                        case 1 -> f.batch.delete(key);
                        default -> f.batch.get(key);
                    }
                }
                f.run("round " + round);
                assertEquals(1, f.index.gets, "get calls");
                assertEquals(1, f.index.upserts, "upsert calls");
                assertEquals(1, f.index.deletes, "delete calls");
                assertEquals(3, f.index.total(), "calls in all");
            }
            for (int i = 0; i < 1000; i++) {
                f.batch.upsert(random.nextInt(-50, 50), 1 + i);
            }
            f.run("upserts only");
            assertEquals(1, f.index.upserts);
            assertEquals(1, f.index.unsortedCalls, "upserts alone go to the index unsorted");
            assertEquals(1, f.index.total(), "upserts alone need no read");
        }
    }

    @Test
    void orderedLookupsAddOneCallPerKind() {
        final SplittableRandom random = new SplittableRandom(7);
        try (Fixture f = new Fixture(1, 10, 2, 20, 3, 30)) {
            for (int i = 0; i < 5000; i++) {
                final long key = random.nextInt(-50, 50);
                switch (random.nextInt(6)) {
                    case 0 -> f.batch.upsert(key, random.nextInt(1, 1000));
                    case 1 -> f.batch.delete(key);
                    case 2 -> f.batch.get(key);
                    case 3 -> f.batch.ceiling(key);
                    case 4 -> f.batch.floor(key);
                    default -> f.batch.range(key, key + random.nextInt(10), 2);
                }
            }
            f.run("mixed");
            assertEquals(1, f.index.gets);
            assertEquals(1, f.index.ceilings);
            assertEquals(1, f.index.floors);
            assertTrue(f.index.ranges >= 1 && f.index.ranges <= 8, "range calls " + f.index.ranges);
            assertEquals(1, f.index.upserts);
            assertEquals(1, f.index.deletes);
        }
    }

    @ParameterizedTest
    @EnumSource(MicroBatchEngine.Sorting.class)
    void aBatchOfGetsOnlyMatchesSequentialExecutionEitherWay(MicroBatchEngine.Sorting sorting) {
        final SplittableRandom random = new SplittableRandom(11);
        final TreeMapOracle oracle = new TreeMapOracle();
        final CountingIndex index = new CountingIndex(openIndex());
        try {
            final long[] keys = random.longs(5000).toArray();
            final long[] values = random.longs(5000, 0, Long.MAX_VALUE).toArray();
            oracle.build(keys, values, keys.length);
            index.build(keys, values, keys.length);
            final MicroBatchEngine engine = new MicroBatchEngine(index, sorting);
            assertEquals(sorting, engine.sorting());
            final OperationBatch batch = new OperationBatch();
            for (int size : new int[] {1, 2, 31, 4096, 20_000}) {
                batch.clear();
                for (int i = 0; i < size; i++) {
                    // present keys, absent keys and repeats, in no order
                    batch.get(random.nextInt(3) == 0 ? random.nextLong() : keys[random.nextInt(keys.length)]);
                }
                executeAndCompare(index, engine, oracle, batch, sorting + " gets only, " + size);
                assertEquals(1, index.gets, "one get call");
                assertEquals(sorting == MicroBatchEngine.Sorting.INDEX_SORT ? 1 : 0, index.unsortedCalls,
                        "unsorted calls");
            }
        } finally {
            index.close();
        }
    }

    @ParameterizedTest
    @EnumSource(MicroBatchEngine.Sorting.class)
    void aBatchOfCeilingsOnlyOrFloorsOnlyMatchesSequentialExecutionEitherWay(MicroBatchEngine.Sorting sorting) {
        final SplittableRandom random = new SplittableRandom(13);
        final TreeMapOracle oracle = new TreeMapOracle();
        final CountingIndex index = new CountingIndex(openIndex());
        try {
            final long[] keys = random.longs(5000, -1L << 40, 1L << 40).toArray();
            final long[] values = random.longs(5000, 0, Long.MAX_VALUE).toArray();
            oracle.build(keys, values, keys.length);
            index.build(keys, values, keys.length);
            final MicroBatchEngine engine = new MicroBatchEngine(index, sorting);
            final OperationBatch batch = new OperationBatch();
            for (boolean ceilings : new boolean[] {true, false}) {
                for (int size : new int[] {1, 2, 31, 4096, 20_000}) {
                    batch.clear();
                    for (int i = 0; i < size; i++) {
                        // stored keys, keys between them, beyond both ends, and repeats, in no order
                        final long key = switch (random.nextInt(4)) {
                            case 0 -> keys[random.nextInt(keys.length)];
                            case 1 -> random.nextBoolean() ? Long.MIN_VALUE + random.nextInt(3)
                                    : Long.MAX_VALUE - random.nextInt(3);
                            default -> random.nextLong(-1L << 41, 1L << 41);
                        };
                        if (ceilings) {
                            batch.ceiling(key);
                        } else {
                            batch.floor(key);
                        }
                    }
                    final String what = sorting + (ceilings ? " ceilings only, " : " floors only, ") + size;
                    executeAndCompare(index, engine, oracle, batch, what);
                    assertEquals(1, ceilings ? index.ceilings : index.floors, what + ": one call");
                    assertEquals(sorting == MicroBatchEngine.Sorting.INDEX_SORT ? 1 : 0, index.unsortedCalls,
                            what + ": unsorted calls");
                }
            }
        } finally {
            index.close();
        }
    }

    @Test
    void theDefaultSortingIsTheBackendsFaster() {
        try (FlixIndex index = openIndex()) {
            assertEquals(MicroBatchEngine.Sorting.fasterFor(index.backend()), new MicroBatchEngine(index).sorting());
            assertThrows(IllegalArgumentException.class, () -> new MicroBatchEngine(index, null));
        }
    }

    @Test
    void nullArgumentsAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> new MicroBatchEngine(null));
        try (FlixIndex index = openIndex()) {
            final MicroBatchEngine engine = new MicroBatchEngine(index);
            assertThrows(IllegalArgumentException.class, () -> engine.execute(null));
        }
    }

    @Test
    void aClosedIndexFailsANonEmptyBatch() {
        final FlixIndex index = openIndex();
        final MicroBatchEngine engine = new MicroBatchEngine(index);
        index.close();
        final OperationBatch batch = new OperationBatch();
        assertEquals(0, engine.execute(batch).size(), "an empty batch does not touch the index");
        batch.upsert(1, 1);
        assertThrows(IllegalStateException.class, () -> engine.execute(batch));
        batch.clear();
        batch.ceiling(1);
        assertThrows(IllegalStateException.class, () -> engine.execute(batch));
    }

    @Test
    void resultsOfTheWrongKindAreRejected() {
        try (Fixture f = new Fixture(1, 10)) {
            final int upsert = f.batch.upsert(2, 20);
            final int get = f.batch.get(1);
            final int range = f.batch.range(0, 5, 1);
            final BatchResults r = f.run("kinds");
            assertThrows(IllegalArgumentException.class, () -> r.value(upsert));
            assertThrows(IllegalArgumentException.class, () -> r.key(get));
            assertThrows(IllegalArgumentException.class, () -> r.rangeCount(get));
            assertThrows(IllegalArgumentException.class, () -> r.value(range));
            assertThrows(IndexOutOfBoundsException.class, () -> r.value(3));
            assertThrows(IndexOutOfBoundsException.class, () -> r.rangeKey(r.rangePairs()));
        }
    }
}
