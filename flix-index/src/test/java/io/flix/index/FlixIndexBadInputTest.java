package io.flix.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad input every {@link FlixIndex} backend must reject: an {@link IllegalArgumentException} that names the
 * argument, thrown before anything changes; and {@link IllegalStateException} for any call after {@code close()}.
 * A backend's test extends this class and says how to open it (as for {@link FlixIndexConformanceTest}; node size
 * and other settings stay at their defaults here).
 */
public abstract class FlixIndexBadInputTest {

    /** Opens an empty index of the backend under test from a builder with default settings. */
    protected abstract FlixIndex open(FlixConfig.Builder config);

    /** Skips the suite (with a JUnit assumption) where the backend cannot run here. */
    protected void assumeBackendAvailable() {
    }

    private static final long MIN = Long.MIN_VALUE;
    private static final long MAX = Long.MAX_VALUE;
    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;

    private FlixIndex index;

    @BeforeEach
    void openPopulatedIndex() {
        assumeBackendAvailable();
        index = open(FlixConfig.builder());
        assertNotNull(index, "open returned null");
        final SplittableRandom rnd = new SplittableRandom(3);
        final int n = 500;
        final long[] keys = new long[n];
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = i < 3 ? new long[] {MIN, 0, MAX}[i] : rnd.nextLong();
            values[i] = rnd.nextLong(0, MAX);
        }
        index.build(keys, values, n);
    }

    @AfterEach
    void closeIndex() {
        if (index != null) {
            index.close();
        }
    }

    /** One bad call and the argument its message must name. */
    record BadCall(String description, String argument, Consumer<FlixIndex> call) {
        @Override
        public String toString() {
            return description;
        }
    }

    /** Three good keys and values, to which each bad call adds one flaw. */
    private static long[] k3() {
        return new long[] {1, 2, 3};
    }

    private static long[] out3() {
        return new long[3];
    }

    static Stream<BadCall> badCalls() {
        final List<BadCall> calls = new ArrayList<>();
        // build and upsert share their checks
        for (String op : new String[] {"build", "upsert"}) {
            final boolean build = op.equals("build");
            final PairsCall pairs = build ? FlixIndex::build : FlixIndex::upsert;
            calls.add(new BadCall(op + ": keys null", "keys", ix -> pairs.call(ix, null, k3(), 3, false)));
            calls.add(new BadCall(op + ": values null", "values", ix -> pairs.call(ix, k3(), null, 3, false)));
            calls.add(new BadCall(op + ": n < 0", "n", ix -> pairs.call(ix, k3(), k3(), -1, false)));
            calls.add(new BadCall(op + ": n = Integer.MIN_VALUE", "n",
                    ix -> pairs.call(ix, k3(), k3(), Integer.MIN_VALUE, false)));
            calls.add(new BadCall(op + ": n beyond keys", "keys",
                    ix -> pairs.call(ix, new long[] {1, 2}, k3(), 3, false)));
            calls.add(new BadCall(op + ": n beyond values", "values",
                    ix -> pairs.call(ix, k3(), new long[] {1, 2}, 3, false)));
            calls.add(new BadCall(op + ": n = Integer.MAX_VALUE", "keys",
                    ix -> pairs.call(ix, k3(), k3(), Integer.MAX_VALUE, false)));
            calls.add(new BadCall(op + ": NOT_FOUND as the last value", "values",
                    ix -> pairs.call(ix, k3(), new long[] {1, 2, NOT_FOUND}, 3, false)));
            calls.add(new BadCall(op + ": NOT_FOUND as the first value, sorted", "values",
                    ix -> pairs.call(ix, k3(), new long[] {NOT_FOUND, 2, 3}, 3, true)));
            calls.add(new BadCall(op + ": keysSorted but the last key is out of order", "keys",
                    ix -> pairs.call(ix, new long[] {1, 5, 4}, k3(), 3, true)));
            calls.add(new BadCall(op + ": keysSorted but MAX before MIN", "keys",
                    ix -> pairs.call(ix, new long[] {MAX, MIN}, k3(), 2, true)));
        }
        calls.add(new BadCall("build: SortedPairs null", "pairs", ix -> ix.build((SortedPairs) null)));
        calls.add(new BadCall("build: SortedPairs out of order", "keys",
                ix -> ix.build(new SortedPairs(new long[] {1, 3, 2}, k3(), 3))));
        calls.add(new BadCall("build: SortedPairs size beyond its arrays", "keys",
                ix -> ix.build(new SortedPairs(k3(), k3(), 4))));
        calls.add(new BadCall("build: SortedPairs holding NOT_FOUND", "values",
                ix -> ix.build(new SortedPairs(k3(), new long[] {1, NOT_FOUND, 3}, 3))));
        calls.add(new BadCall("build: SortedPairs with null keys", "keys",
                ix -> ix.build(new SortedPairs(null, k3(), 3))));

        calls.add(new BadCall("delete: keys null", "keys", ix -> ix.delete(null, 3, false)));
        calls.add(new BadCall("delete: n < 0", "n", ix -> ix.delete(k3(), -1, false)));
        calls.add(new BadCall("delete: n beyond keys", "keys", ix -> ix.delete(k3(), 4, false)));
        calls.add(new BadCall("delete: keysSorted but unsorted", "keys",
                ix -> ix.delete(new long[] {MIN, MAX, 0}, 3, true)));

        calls.add(new BadCall("get: keys null", "keys", ix -> ix.get(null, 3, out3(), false)));
        calls.add(new BadCall("get: valuesOut null", "valuesOut", ix -> ix.get(k3(), 3, null, false)));
        calls.add(new BadCall("get: n < 0", "n", ix -> ix.get(k3(), -1, out3(), false)));
        calls.add(new BadCall("get: n beyond keys", "keys", ix -> ix.get(k3(), 4, new long[4], false)));
        calls.add(new BadCall("get: n beyond valuesOut", "valuesOut", ix -> ix.get(k3(), 3, new long[2], false)));
        calls.add(new BadCall("get: n = Integer.MAX_VALUE", "keys",
                ix -> ix.get(k3(), Integer.MAX_VALUE, out3(), false)));
        calls.add(new BadCall("get: keysSorted but unsorted", "keys",
                ix -> ix.get(new long[] {2, 1, 3}, 3, out3(), true)));

        for (String op : new String[] {"ceiling", "floor"}) {
            final OrderedCall ordered = op.equals("ceiling") ? FlixIndex::ceiling : FlixIndex::floor;
            calls.add(new BadCall(op + ": keys null", "keys", ix -> ordered.call(ix, null, 3, out3(), out3(), false)));
            calls.add(new BadCall(op + ": keysOut null", "keysOut",
                    ix -> ordered.call(ix, k3(), 3, null, out3(), false)));
            calls.add(new BadCall(op + ": valuesOut null", "valuesOut",
                    ix -> ordered.call(ix, k3(), 3, out3(), null, false)));
            calls.add(new BadCall(op + ": n < 0", "n", ix -> ordered.call(ix, k3(), -1, out3(), out3(), false)));
            calls.add(new BadCall(op + ": n beyond keys", "keys",
                    ix -> ordered.call(ix, k3(), 4, new long[4], new long[4], false)));
            calls.add(new BadCall(op + ": n beyond keysOut", "keysOut",
                    ix -> ordered.call(ix, k3(), 3, new long[2], out3(), false)));
            calls.add(new BadCall(op + ": n beyond valuesOut", "valuesOut",
                    ix -> ordered.call(ix, k3(), 3, out3(), new long[2], false)));
            calls.add(new BadCall(op + ": keysSorted but unsorted", "keys",
                    ix -> ordered.call(ix, new long[] {1, 3, 2}, 3, out3(), out3(), true)));
            final long[] both = out3();
            calls.add(new BadCall(op + ": keysOut and valuesOut one array", "keysOut",
                    ix -> ordered.call(ix, k3(), 3, both, both, false)));
        }

        calls.add(new BadCall("range: lo null", "lo", ix -> ix.range(null, k3(), 3, 10)));
        calls.add(new BadCall("range: hi null", "hi", ix -> ix.range(k3(), null, 3, 10)));
        calls.add(new BadCall("range: n < 0", "n", ix -> ix.range(k3(), k3(), -1, 10)));
        calls.add(new BadCall("range: n beyond lo", "lo", ix -> ix.range(new long[] {1, 2}, k3(), 3, 10)));
        calls.add(new BadCall("range: n beyond hi", "hi", ix -> ix.range(k3(), new long[] {1, 2}, 3, 10)));
        calls.add(new BadCall("range: lo > hi in the last range", "lo",
                ix -> ix.range(new long[] {MIN, 0, 5}, new long[] {MAX, 0, 4}, 3, 10)));
        calls.add(new BadCall("range: lo = MAX > hi = MIN", "lo",
                ix -> ix.range(new long[] {MAX}, new long[] {MIN}, 1, 10)));
        calls.add(new BadCall("range: limitPerRange 0", "limitPerRange", ix -> ix.range(k3(), k3(), 3, 0)));
        calls.add(new BadCall("range: limitPerRange -1", "limitPerRange", ix -> ix.range(k3(), k3(), 3, -1)));
        calls.add(new BadCall("range: limitPerRange Integer.MIN_VALUE", "limitPerRange",
                ix -> ix.range(k3(), k3(), 3, Integer.MIN_VALUE)));

        calls.add(new BadCall("exportFrom: keysOut null", "keysOut", ix -> ix.exportFrom(MIN, null, out3())));
        calls.add(new BadCall("exportFrom: valuesOut null", "valuesOut", ix -> ix.exportFrom(MIN, out3(), null)));
        calls.add(new BadCall("exportFrom: valuesOut shorter than keysOut", "valuesOut",
                ix -> ix.exportFrom(MIN, out3(), new long[2])));
        for (long after : new long[] {MIN, MAX}) { // MAX: the call that copies nothing checks its arguments too
            calls.add(new BadCall("exportAfter(" + after + "): keysOut null", "keysOut",
                    ix -> ix.exportAfter(after, null, out3())));
            calls.add(new BadCall("exportAfter(" + after + "): valuesOut null", "valuesOut",
                    ix -> ix.exportAfter(after, out3(), null)));
            calls.add(new BadCall("exportAfter(" + after + "): valuesOut shorter than keysOut", "valuesOut",
                    ix -> ix.exportAfter(after, out3(), new long[2])));
        }
        return calls.stream();
    }

    @FunctionalInterface
    interface PairsCall {
        void call(FlixIndex index, long[] keys, long[] values, int n, boolean keysSorted);
    }

    @FunctionalInterface
    interface OrderedCall {
        void call(FlixIndex index, long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badCalls")
    void badInputIsRejectedNamingTheArgumentAndChangesNothing(BadCall bad) {
        final SortedPairs before = index.export();
        final long sizeBefore = index.size();
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> bad.call().accept(index),
                bad.description());
        final String message = String.valueOf(e.getMessage());
        assertTrue(Pattern.compile("\\b" + Pattern.quote(bad.argument()) + "\\b").matcher(message).find(),
                () -> bad.description() + ": message must name '" + bad.argument() + "': " + message);
        assertUnchanged(before, sizeBefore);
        // and the index still works
        final long[] values = new long[before.size()];
        index.get(before.keys(), before.size(), values);
        assertArrayEquals(Arrays.copyOf(before.values(), before.size()), values, "gets after a rejected call");
    }

    private void assertUnchanged(SortedPairs before, long sizeBefore) {
        assertEquals(sizeBefore, index.size(), "size after a rejected call");
        final SortedPairs after = index.export();
        assertEquals(before.size(), after.size(), "exported pairs after a rejected call");
        assertArrayEquals(Arrays.copyOf(before.keys(), before.size()), Arrays.copyOf(after.keys(), after.size()),
                "keys after a rejected call");
        assertArrayEquals(Arrays.copyOf(before.values(), before.size()),
                Arrays.copyOf(after.values(), after.size()), "values after a rejected call");
    }

    /**
     * Among many ranges (enough for a backend to check them where it reads them), the first out of order is named,
     * whether few or all are, whatever the limit, and a result passed for reuse keeps what it held.
     */
    @Test
    void theFirstRangeOutOfOrderAmongManyIsNamedAndAReusedResultIsUntouched() {
        final SplittableRandom rnd = new SplittableRandom(11);
        final int n = 70_000;
        final long[] lo = new long[n];
        final long[] hi = new long[n];
        for (int i = 0; i < n; i++) {
            lo[i] = rnd.nextLong();
            final long span = rnd.nextLong(0, 1L << 60);
            hi[i] = lo[i] + span < lo[i] ? MAX : lo[i] + span;
        }
        final RangeResult reuse = index.range(lo, hi, n, 8);
        final RangeResult held = new RangeResult(reuse.offsets().clone(), reuse.keys().clone(),
                reuse.values().clone());
        final int first = 12_345 + rnd.nextInt(40_000);
        final long[] badLo = lo.clone();
        final long[] badHi = hi.clone();
        for (int i = first; i < n; i += 1 + rnd.nextInt(5_000)) {
            badLo[i] = MAX - rnd.nextInt(3);
            badHi[i] = MIN + rnd.nextInt(3);
        }
        final long[] allLo = new long[n];
        final long[] allHi = new long[n];
        Arrays.fill(allLo, MAX);
        Arrays.fill(allHi, MIN);
        for (int limit : new int[] {1, 16, Integer.MAX_VALUE}) {
            final IllegalArgumentException some = assertThrows(IllegalArgumentException.class,
                    () -> index.range(badLo, badHi, n, limit, reuse));
            assertEquals("lo[" + first + "] = " + badLo[first] + " is greater than hi[" + first + "] = "
                    + badHi[first], some.getMessage(), "limit " + limit);
            final IllegalArgumentException all = assertThrows(IllegalArgumentException.class,
                    () -> index.range(allLo, allHi, n, limit, reuse));
            assertEquals("lo[0] = " + MAX + " is greater than hi[0] = " + MIN, all.getMessage(), "limit " + limit);
        }
        assertArrayEquals(held.offsets(), reuse.offsets(), "offsets of the reused result");
        assertArrayEquals(held.keys(), reuse.keys(), "keys of the reused result");
        assertArrayEquals(held.values(), reuse.values(), "values of the reused result");
        final RangeResult again = index.range(lo, hi, n, 8);
        assertArrayEquals(held.offsets(), again.offsets(), "ranges after the rejected calls");
    }

    @Test
    void lookupOutputsAreUntouchedByARejectedCall() {
        final long[] keysOut = {11, 12, 13};
        final long[] valuesOut = {21, 22, 23};
        assertThrows(IllegalArgumentException.class, () -> index.ceiling(new long[] {3, 2, 1}, 3, keysOut, valuesOut,
                true));
        assertThrows(IllegalArgumentException.class, () -> index.floor(new long[] {1, 2}, 3, keysOut, valuesOut));
        assertThrows(IllegalArgumentException.class, () -> index.get(new long[] {1, 2, 3}, 3, new long[2]));
        assertThrows(IllegalArgumentException.class, () -> index.get(new long[] {3, 2, 1}, 3, valuesOut, true));
        assertArrayEquals(new long[] {11, 12, 13}, keysOut);
        assertArrayEquals(new long[] {21, 22, 23}, valuesOut);
    }

    @Test
    void openingWithoutAConfigNamesTheConfig() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> FlixIndex.open(null));
        assertTrue(String.valueOf(e.getMessage()).contains("config"), e.getMessage());
    }

    /** Every call but close() on a closed index. */
    static Stream<BadCall> callsOnAClosedIndex() {
        return Stream.of(
                new BadCall("build", "", ix -> ix.build(k3(), k3(), 3)),
                new BadCall("build(SortedPairs)", "", ix -> ix.build(new SortedPairs(k3(), k3(), 3))),
                new BadCall("upsert", "", ix -> ix.upsert(k3(), k3(), 3)),
                new BadCall("delete", "", ix -> ix.delete(k3(), 3)),
                new BadCall("get", "", ix -> ix.get(k3(), 3, out3())),
                new BadCall("ceiling", "", ix -> ix.ceiling(k3(), 3, out3(), out3())),
                new BadCall("floor", "", ix -> ix.floor(k3(), 3, out3(), out3())),
                new BadCall("range", "", ix -> ix.range(k3(), k3(), 3, 1)),
                new BadCall("restructure", "", FlixIndex::restructure),
                new BadCall("exportFrom", "", ix -> ix.exportFrom(MIN, out3(), out3())),
                new BadCall("exportAfter", "", ix -> ix.exportAfter(MIN, out3(), out3())),
                new BadCall("exportAfter(MAX)", "", ix -> ix.exportAfter(MAX, out3(), out3())),
                new BadCall("backend", "", FlixIndex::backend),
                new BadCall("export", "", FlixIndex::export),
                new BadCall("size", "", FlixIndex::size),
                new BadCall("stats", "", FlixIndex::stats),
                new BadCall("empty upsert", "", ix -> ix.upsert(new long[0], new long[0], 0)));
    }

    @ParameterizedTest(name = "{0} after close")
    @MethodSource("callsOnAClosedIndex")
    void callsAfterCloseThrowIllegalState(BadCall call) {
        index.close();
        assertThrows(IllegalStateException.class, () -> call.call().accept(index), call.description());
    }

    @Test
    void closeTwiceIsFine() {
        index.close();
        index.close();
        assertThrows(IllegalStateException.class, index::size);
    }
}
