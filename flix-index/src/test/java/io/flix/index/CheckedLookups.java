package io.flix.index;

import static org.junit.jupiter.api.Assertions.fail;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.IntFunction;

/**
 * One thread's random lookups of every kind (get, ceiling, floor, range, exportFrom, exportAfter, export, size,
 * stats) on an index that other threads use at the same time, each answer checked against the states of
 * {@link IndexStates} that the index may have held while the call ran. Batch sizes cover every path of the
 * backends: a few keys, sorted with a permutation (from 1024), split over threads (from 4096) and sorted over
 * threads (from 131072).
 */
final class CheckedLookups {

    private final FlixIndex index;
    private final IndexStates states;
    private final SplittableRandom rnd;
    /** Keys the index holds or held: probes are drawn from them, their neighbours, the extremes and anywhere. */
    private final long[] universe;
    private final String thread;
    private long lookups;
    private long overlappingUpdates;

    CheckedLookups(FlixIndex index, IndexStates states, long[] universe, long seed, String thread) {
        this.index = index;
        this.states = states;
        this.universe = universe;
        this.rnd = new SplittableRandom(seed);
        this.thread = thread;
    }

    /** Lookups run so far. */
    long lookups() {
        return lookups;
    }

    /** Lookups that ran while an update was being applied (their answer could come from two states or more). */
    long overlappingUpdates() {
        return overlappingUpdates;
    }

    /** Runs one random lookup and checks its answer. */
    void runOne() {
        final int op = rnd.nextInt(100);
        if (op < 30) {
            get();
        } else if (op < 44) {
            ordered(true);
        } else if (op < 58) {
            ordered(false);
        } else if (op < 74) {
            range();
        } else if (op < 86) {
            exportPage();
        } else if (op < 90) {
            exportAll();
        } else if (op < 95) {
            final int first = states.appliedUpdates();
            final long size = index.size();
            check("size() = " + size, first, j -> states.state(j).size() == size ? null : "size "
                    + states.state(j).size());
        } else {
            final int first = states.appliedUpdates();
            final long size = index.stats().size();
            check("stats().size() = " + size, first, j -> states.state(j).size() == size ? null : "size "
                    + states.state(j).size());
        }
        lookups++;
    }

    private void get() {
        final int n = batchSize();
        final boolean sorted = rnd.nextBoolean();
        final long[] keys = probes(n, sorted);
        final long[] actual = new long[n];
        final int first = states.appliedUpdates();
        index.get(keys, n, actual, sorted);
        check("get of " + n + " keys" + (sorted ? " (sorted)" : ""), first, j -> {
            final long[] expected = new long[n];
            states.state(j).get(keys, n, expected, sorted);
            final int at = Arrays.mismatch(expected, actual);
            return at < 0 ? null : "get(" + keys[at] + ") = " + actual[at] + " where this state holds " + expected[at];
        });
    }

    private void ordered(boolean ceiling) {
        final int n = batchSize();
        final boolean sorted = rnd.nextBoolean();
        final long[] keys = probes(n, sorted);
        final long[] actualKeys = new long[n];
        final long[] actualValues = new long[n];
        final int first = states.appliedUpdates();
        if (ceiling) {
            index.ceiling(keys, n, actualKeys, actualValues, sorted);
        } else {
            index.floor(keys, n, actualKeys, actualValues, sorted);
        }
        final String op = ceiling ? "ceiling" : "floor";
        check(op + " of " + n + " keys" + (sorted ? " (sorted)" : ""), first, j -> {
            final long[] expectedKeys = new long[n];
            final long[] expectedValues = new long[n];
            if (ceiling) {
                states.state(j).ceiling(keys, n, expectedKeys, expectedValues, sorted);
            } else {
                states.state(j).floor(keys, n, expectedKeys, expectedValues, sorted);
            }
            int at = Arrays.mismatch(expectedKeys, actualKeys);
            if (at < 0) {
                at = Arrays.mismatch(expectedValues, actualValues);
            }
            return at < 0 ? null : op + "(" + keys[at] + ") = (" + actualKeys[at] + ", " + actualValues[at]
                    + ") where this state answers (" + expectedKeys[at] + ", " + expectedValues[at] + ")";
        });
    }

    private void range() {
        final int n = rnd.nextInt(1, 60);
        final long[] lo = new long[n];
        final long[] hi = new long[n];
        for (int i = 0; i < n; i++) {
            lo[i] = probe();
            final long width = rnd.nextInt(4) == 0 ? rnd.nextLong(0, Long.MAX_VALUE) : rnd.nextLong(0, 1L << 50);
            hi[i] = lo[i] > Long.MAX_VALUE - width ? Long.MAX_VALUE : lo[i] + width;
        }
        final int limit = new int[] {1, 3, 16, 200, Integer.MAX_VALUE}[rnd.nextInt(5)];
        final int first = states.appliedUpdates();
        final RangeResult actual = index.range(lo, hi, n, limit);
        check("range of " + n + " ranges, limit " + limit, first, j -> {
            final RangeResult expected = states.state(j).range(lo, hi, n, limit);
            if (!Arrays.equals(expected.offsets(), actual.offsets())) {
                return "offsets " + Arrays.toString(actual.offsets()) + " where this state has "
                        + Arrays.toString(expected.offsets());
            }
            final int total = expected.offsets()[n];
            if (Arrays.mismatch(expected.keys(), 0, total, actual.keys(), 0, total) >= 0
                    || Arrays.mismatch(expected.values(), 0, total, actual.values(), 0, total) >= 0) {
                return "other pairs than this state's";
            }
            return null;
        });
    }

    /** One page of exportFrom or exportAfter. */
    private void exportPage() {
        final int page = rnd.nextInt(1, 500);
        final long from = probe();
        final boolean after = rnd.nextBoolean();
        final long[] keys = new long[page];
        final long[] values = new long[page];
        final int first = states.appliedUpdates();
        final int copied = after ? index.exportAfter(from, keys, values) : index.exportFrom(from, keys, values);
        final String op = (after ? "exportAfter(" : "exportFrom(") + from + ") of " + page;
        check(op, first, j -> {
            final long[] expectedKeys = new long[page];
            final long[] expectedValues = new long[page];
            final int expected = after ? states.state(j).exportAfter(from, expectedKeys, expectedValues)
                    : states.state(j).exportFrom(from, expectedKeys, expectedValues);
            if (expected != copied) {
                return copied + " pairs where this state has " + expected;
            }
            return Arrays.mismatch(expectedKeys, 0, copied, keys, 0, copied) < 0
                    && Arrays.mismatch(expectedValues, 0, copied, values, 0, copied) < 0 ? null
                    : "other pairs than this state's";
        });
    }

    private void exportAll() {
        final int first = states.appliedUpdates();
        final SortedPairs actual = index.export();
        check("export()", first, j -> {
            final SortedPairs expected = states.state(j).export();
            if (expected.size() != actual.size()) {
                return actual.size() + " pairs where this state has " + expected.size();
            }
            final int n = expected.size();
            return Arrays.mismatch(expected.keys(), 0, n, actual.keys(), 0, n) < 0
                    && Arrays.mismatch(expected.values(), 0, n, actual.values(), 0, n) < 0 ? null
                    : "other pairs than this state's";
        });
    }

    /**
     * Passes where the answer equals that of a state the index may have held during the call: from {@code first}
     * (updates applied before the call) to the updates started by now. {@code differsFrom} says how the answer
     * differs from state {@code j}'s, or null where it is the same.
     */
    private void check(String call, int first, IntFunction<String> differsFrom) {
        final int last = states.startedUpdates();
        if (last > first) {
            overlappingUpdates++;
        }
        String difference = null;
        for (int j = first; j <= last; j++) {
            difference = differsFrom.apply(j);
            if (difference == null) {
                return;
            }
        }
        fail(thread + ", lookup " + lookups + ": " + call + " matches none of the states " + first + ".." + last
                + " the index could hold during the call; against state " + last + ": " + difference);
    }

    private int batchSize() {
        final int r = rnd.nextInt(100);
        return r < 40 ? rnd.nextInt(1, 64)
                : r < 75 ? rnd.nextInt(1024, 3000)
                : r < 98 ? rnd.nextInt(4096, 12_000)
                : rnd.nextInt(131_072, 140_000);
    }

    private long[] probes(int n, boolean sorted) {
        final long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = probe();
        }
        if (sorted) {
            Arrays.sort(keys);
        }
        return keys;
    }

    private long probe() {
        final int r = rnd.nextInt(100);
        if (r < 55) {
            return universe[rnd.nextInt(universe.length)];
        }
        if (r < 70) {
            final long k = universe[rnd.nextInt(universe.length)];
            return rnd.nextBoolean() ? (k == Long.MAX_VALUE ? k : k + 1) : (k == Long.MIN_VALUE ? k : k - 1);
        }
        if (r < 75) {
            return FlixIndexConformanceTest.EXTREMES[rnd.nextInt(FlixIndexConformanceTest.EXTREMES.length)];
        }
        return rnd.nextLong();
    }
}
