package io.flix.index;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;

/**
 * An index under test and a {@link TreeMapOracle} driven in lockstep: every update goes to both, every lookup is
 * answered by both and compared element by element. Counts what it checked so a suite can report its coverage.
 */
final class DifferentialIndex implements AutoCloseable {

    /** What a lookup leaves past {@code n} in an output array must be what the caller put there. */
    static final long UNTOUCHED = 0x5A5A_5A5A_5A5A_5A5AL;

    /** Operations compared against the oracle, by kind. */
    static final class Counters {
        final AtomicLong updatedKeys = new AtomicLong();
        final AtomicLong lookups = new AtomicLong();
        final AtomicLong rangeQueries = new AtomicLong();
        final AtomicLong comparedPairs = new AtomicLong();

        long total() {
            return updatedKeys.get() + lookups.get() + rangeQueries.get() + comparedPairs.get();
        }

        void reset() {
            updatedKeys.set(0);
            lookups.set(0);
            rangeQueries.set(0);
            comparedPairs.set(0);
        }

        @Override
        public String toString() {
            return total() + " (updated keys " + updatedKeys + ", point lookups " + lookups + ", range queries "
                    + rangeQueries + ", pairs compared in ranges and exports " + comparedPairs + ")";
        }
    }

    final FlixIndex index;
    final TreeMapOracle oracle = new TreeMapOracle();
    private final boolean structured;
    private final int nodeSize;
    private final Counters counters;
    /** Prefixed to every failure message: which workload, which step. */
    String context = "";

    DifferentialIndex(FlixIndex index, boolean structured, int nodeSize, Counters counters) {
        this.index = index;
        this.structured = structured;
        this.nodeSize = nodeSize;
        this.counters = counters;
    }

    // ---------------------------------------------------------------- updates

    void build(long[] keys, long[] values, int n, boolean keysSorted) {
        final long[] keysBefore = keys.clone();
        final long[] valuesBefore = values.clone();
        index.build(keys, values, n, keysSorted);
        assertInputUnchanged("build", keysBefore, keys, valuesBefore, values);
        oracle.build(keys, values, n, keysSorted);
        counters.updatedKeys.addAndGet(n);
        checkSize("build");
    }

    void build(SortedPairs pairs) {
        final long[] keysBefore = pairs.keys().clone();
        final long[] valuesBefore = pairs.values().clone();
        index.build(pairs);
        assertInputUnchanged("build(SortedPairs)", keysBefore, pairs.keys(), valuesBefore, pairs.values());
        oracle.build(pairs);
        counters.updatedKeys.addAndGet(pairs.size());
        checkSize("build(SortedPairs)");
    }

    void upsert(long[] keys, long[] values, int n, boolean keysSorted) {
        final long[] keysBefore = keys.clone();
        final long[] valuesBefore = values.clone();
        index.upsert(keys, values, n, keysSorted);
        assertInputUnchanged("upsert", keysBefore, keys, valuesBefore, values);
        oracle.upsert(keys, values, n, keysSorted);
        counters.updatedKeys.addAndGet(n);
        checkSize("upsert");
    }

    void delete(long[] keys, int n, boolean keysSorted) {
        final long[] keysBefore = keys.clone();
        index.delete(keys, n, keysSorted);
        assertArrayEquals(keysBefore, keys, () -> context + ": delete modified its keys argument");
        oracle.delete(keys, n, keysSorted);
        counters.updatedKeys.addAndGet(n);
        checkSize("delete");
    }

    /** Restructures the index and checks the contents survive and chains are flat. Returns the nodes recovered. */
    long restructure() {
        final IndexStats before = index.stats();
        final long recovered = index.restructure();
        oracle.restructure();
        final IndexStats after = index.stats();
        if (structured) {
            assertEquals(before.nodes() - after.nodes(), recovered,
                    () -> context + ": restructure must return nodes before minus nodes after; before " + before
                            + ", after " + after);
            if (after.size() > 0) {
                assertEquals(1, after.longestChain(), () -> context + ": chains after restructure: " + after);
            }
        }
        checkContents("after restructure");
        checkStats();
        return recovered;
    }

    // ---------------------------------------------------------------- lookups

    void get(long[] keys, int n, boolean keysSorted) {
        final long[] keysBefore = keys.clone();
        final long[] actual = untouchedArray(n + 2);
        index.get(keys, n, actual, keysSorted);
        assertArrayEquals(keysBefore, keys, () -> context + ": get modified its keys argument");
        final long[] expected = untouchedArray(n + 2);
        oracle.get(keys, n, expected, keysSorted);
        for (int i = 0; i < n + 2; i++) {
            if (actual[i] != expected[i]) {
                fail(context + ": get" + where(keys, n, i) + " returned value " + actual[i] + ", expected "
                        + expected[i]);
            }
        }
        counters.lookups.addAndGet(n);
    }

    void ceiling(long[] keys, int n, boolean keysSorted) {
        ordered("ceiling", keys, n, keysSorted);
    }

    void floor(long[] keys, int n, boolean keysSorted) {
        ordered("floor", keys, n, keysSorted);
    }

    private void ordered(String op, long[] keys, int n, boolean keysSorted) {
        final long[] keysBefore = keys.clone();
        final long[] actualKeys = untouchedArray(n + 2);
        final long[] actualValues = untouchedArray(n + 2);
        final long[] expectedKeys = untouchedArray(n + 2);
        final long[] expectedValues = untouchedArray(n + 2);
        if (op.equals("ceiling")) {
            index.ceiling(keys, n, actualKeys, actualValues, keysSorted);
            oracle.ceiling(keys, n, expectedKeys, expectedValues, keysSorted);
        } else {
            index.floor(keys, n, actualKeys, actualValues, keysSorted);
            oracle.floor(keys, n, expectedKeys, expectedValues, keysSorted);
        }
        assertArrayEquals(keysBefore, keys, () -> context + ": " + op + " modified its keys argument");
        for (int i = 0; i < n + 2; i++) {
            if (actualKeys[i] != expectedKeys[i] || actualValues[i] != expectedValues[i]) {
                fail(context + ": " + op + where(keys, n, i) + " returned (" + actualKeys[i] + ", "
                        + actualValues[i] + "), expected (" + expectedKeys[i] + ", " + expectedValues[i] + ")");
            }
        }
        counters.lookups.addAndGet(n);
    }

    RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        final long[] loBefore = lo.clone();
        final long[] hiBefore = hi.clone();
        final RangeResult actual = index.range(lo, hi, n, limitPerRange);
        assertArrayEquals(loBefore, lo, () -> context + ": range modified lo");
        assertArrayEquals(hiBefore, hi, () -> context + ": range modified hi");
        final RangeResult expected = oracle.range(lo, hi, n, limitPerRange);
        assertNotNull(actual, () -> context + ": range returned null");
        assertEquals(n + 1, actual.offsets().length, () -> context + ": range offsets.length for n = " + n);
        assertEquals(n, actual.ranges(), () -> context + ": ranges()");
        for (int i = 0; i <= n; i++) {
            if (actual.offsets()[i] != expected.offsets()[i]) {
                final int at = i;
                fail(context + ": range offsets[" + at + "] = " + actual.offsets()[at] + ", expected "
                        + expected.offsets()[at] + (at > 0 ? " (range [" + lo[at - 1] + ", " + hi[at - 1]
                        + "], limit " + limitPerRange + ")" : ""));
            }
        }
        final int total = expected.offsets()[n];
        assertTrue(actual.keys().length >= total && actual.values().length >= total,
                () -> context + ": range result arrays shorter than offsets[n] = " + total);
        for (int r = 0; r < n; r++) {
            for (int j = expected.offsets()[r]; j < expected.offsets()[r + 1]; j++) {
                if (actual.keys()[j] != expected.keys()[j] || actual.values()[j] != expected.values()[j]) {
                    fail(context + ": range " + r + " [" + lo[r] + ", " + hi[r] + "] limit " + limitPerRange
                            + " pair " + (j - expected.offsets()[r]) + " is (" + actual.keys()[j] + ", "
                            + actual.values()[j] + "), expected (" + expected.keys()[j] + ", "
                            + expected.values()[j] + ")");
                }
            }
        }
        counters.rangeQueries.addAndGet(n);
        counters.comparedPairs.addAndGet(total);
        return actual;
    }

    // ---------------------------------------------------------------- contents and shape

    /** The full export, the size and the stats equal the oracle's. */
    void checkContents(String when) {
        final SortedPairs actual = index.export();
        final SortedPairs expected = oracle.export();
        assertPairsEqual(when, expected, actual);
        checkSize(when);
    }

    void assertPairsEqual(String when, SortedPairs expected, SortedPairs actual) {
        assertNotNull(actual, () -> context + ": export returned null " + when);
        assertEquals(expected.size(), actual.size(), () -> context + ": exported pair count " + when);
        for (int i = 0; i < expected.size(); i++) {
            if (actual.keys()[i] != expected.keys()[i] || actual.values()[i] != expected.values()[i]) {
                fail(context + ": exported pair " + i + " " + when + " is (" + actual.keys()[i] + ", "
                        + actual.values()[i] + "), expected (" + expected.keys()[i] + ", " + expected.values()[i]
                        + ")");
            }
        }
        counters.comparedPairs.addAndGet(expected.size());
    }

    /**
     * Pages through the index from {@code fromKey} as {@link FlixIndex#exportAfter} says: exportFrom for the first
     * page, then exportAfter the last key copied until a page is empty. Each page is compared with the oracle's;
     * a paging that has not ended after one page per stored pair fails (it would loop forever).
     */
    void checkExportPaged(long fromKey, int pageSize) {
        final long[] keys = untouchedArray(pageSize);
        final long[] values = untouchedArray(pageSize);
        final long[] expectedKeys = new long[pageSize];
        final long[] expectedValues = new long[pageSize];
        final long mostPages = oracle.size() + 1;
        String call = "exportFrom(" + fromKey + ")";
        int copied = index.exportFrom(fromKey, keys, values);
        int expected = oracle.exportFrom(fromKey, expectedKeys, expectedValues);
        for (long pages = 1; ; pages++) {
            final String page = call;
            assertEquals(expected, copied, () -> context + ": " + page + " page size " + pageSize);
            for (int i = 0; i < copied; i++) {
                if (keys[i] != expectedKeys[i] || values[i] != expectedValues[i]) {
                    fail(context + ": " + page + " pair " + i + " is (" + keys[i] + ", " + values[i]
                            + "), expected (" + expectedKeys[i] + ", " + expectedValues[i] + ")");
                }
            }
            counters.comparedPairs.addAndGet(copied);
            if (copied == 0) {
                return;
            }
            if (pages > mostPages) {
                fail(context + ": paging from " + fromKey + " in pages of " + pageSize + " has not ended after "
                        + pages + " pages for " + oracle.size() + " pairs (last " + page + ")");
            }
            final long last = keys[copied - 1];
            call = "exportAfter(" + last + ")";
            copied = index.exportAfter(last, keys, values);
            expected = oracle.exportAfter(last, expectedKeys, expectedValues);
        }
    }

    void checkSize(String when) {
        assertEquals(oracle.size(), index.size(), () -> context + ": size " + when);
    }

    /** Stats agree with the oracle's size; a non-empty structured index has positive nodes, buckets and bytes. */
    void checkStats() {
        final IndexStats s = index.stats();
        assertNotNull(s, () -> context + ": stats returned null");
        final long size = oracle.size();
        assertEquals(size, s.size(), () -> context + ": stats().size() " + s);
        assertEquals(index.backend(), s.backend(), () -> context + ": stats().backend() " + s);
        assertNotEquals(Backend.AUTO, index.backend(), () -> context + ": backend() must name the backend in use");
        if (!structured) {
            return;
        }
        assertEquals(nodeSize, s.nodeSize(), () -> context + ": stats().nodeSize() " + s);
        assertTrue(s.buckets() >= 0 && s.nodes() >= 0 && s.freeNodes() >= 0 && s.longestChain() >= 0
                && s.bytes() >= 0, () -> context + ": negative stats " + s);
        if (size > 0) {
            assertTrue(s.buckets() > 0, () -> context + ": no buckets in a non-empty index: " + s);
            assertTrue(s.nodes() > 0, () -> context + ": no nodes in a non-empty index: " + s);
            assertTrue(s.bytes() > 0, () -> context + ": no bytes in a non-empty index: " + s);
            assertTrue(s.longestChain() >= 1 && s.longestChain() <= s.nodes(),
                    () -> context + ": longest chain out of [1, nodes]: " + s);
            assertTrue(s.nodes() * (long) nodeSize >= size,
                    () -> context + ": nodes cannot hold " + size + " keys: " + s);
        }
    }

    IndexStats stats() {
        return index.stats();
    }

    @Override
    public void close() {
        index.close();
    }

    // ---------------------------------------------------------------- helpers

    static long[] untouchedArray(int length) {
        final long[] a = new long[length];
        Arrays.fill(a, UNTOUCHED);
        return a;
    }

    private static String where(long[] keys, int n, int i) {
        return i < n ? "(keys[" + i + "] = " + keys[i] + ")" : " wrote past n = " + n + " at output index " + i;
    }

    private void assertInputUnchanged(String op, long[] keysBefore, long[] keys, long[] valuesBefore,
                                      long[] values) {
        assertArrayEquals(keysBefore, keys, () -> context + ": " + op + " modified its keys argument");
        assertArrayEquals(valuesBefore, values, () -> context + ": " + op + " modified its values argument");
    }
}
