package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.GpuMemoryBudget;
import io.flix.index.IndexStats;
import io.flix.index.RangeResult;
import io.flix.index.TreeMapOracle;

import java.util.Arrays;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The GPU memory budget on the device: an index filled against a small budget is refused, with the sizes named,
 * before the device runs out; the refused batch changes nothing, every earlier key answers, and the index keeps
 * working; indexes on one device share the budget; a fraction is of the device's memory. Every test gives back all
 * it reserved. Skips where no GPU is usable.
 */
class GpuFlixIndexMemoryBudgetTest {

    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;
    /** Keys per batch: every call of the fill and of the checks after it takes this many (or fewer). */
    private static final int N = 1 << 16;

    private static void assumeGpu() {
        Assumptions.assumeTrue(GpuSupport.isAvailable(), GpuSupport.unavailableReason());
    }

    private static DeviceMemoryLedger ledger() throws Exception {
        return GpuRuntime.device(0).memory;
    }

    private static GpuFlixIndex open(GpuMemoryBudget budget) {
        return GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).gpuMemoryBudget(budget).build());
    }

    /**
     * Batches of N new keys (an eighth of them replacing stored ones) until the budget refuses one. Each round
     * also runs every call the checks after the refusal run, at the same sizes, so that their batch scratch is
     * held before the refusal and the checks need no more memory.
     */
    @Test
    void growthPastTheBudgetIsRefusedBeforeAnythingChangesAndTheIndexKeepsWorking() throws Exception {
        assumeGpu();
        final DeviceMemoryLedger ledger = ledger();
        final long before = ledger.bytesInUse();
        final long budgetBytes = before + (96L << 20);
        final SplittableRandom rnd = new SplittableRandom(41);
        try (GpuFlixIndex gpu = open(GpuMemoryBudget.ofBytes(budgetBytes));
             TreeMapOracle oracle = new TreeMapOracle()) {
            DeviceMemoryBudgetExceededException refused = null;
            long[][] refusedBatch = null;
            for (int round = 0; round < 1_000 && refused == null; round++) {
                final long[][] batch = batch(rnd, oracle);
                final IndexStats statsBefore = gpu.stats();
                try {
                    gpu.upsert(batch[0], batch[1], N);
                } catch (DeviceMemoryBudgetExceededException e) {
                    refused = e;
                    refusedBatch = batch;
                    assertShape(statsBefore, gpu.stats(), "the refused upsert changed nothing");
                    break;
                }
                oracle.upsert(batch[0], batch[1], N);
                assertTrue(ledger.bytesInUse() <= budgetBytes, "round " + round + ": " + ledger.bytesInUse());
                exercise(gpu, oracle, rnd, batch[0], "round " + round);
            }
            assertNotNull(refused, "the budget refused a batch");
            final String m = refused.getMessage();
            assertEquals(budgetBytes, refused.budgetBytes());
            assertTrue(refused.bytesInUse() <= budgetBytes && refused.bytesInUse() + refused.bytesRequested()
                    > budgetBytes, "refused because it would pass the budget: " + m);
            for (String part : new String[] {budgetBytes + " bytes", "asks for " + refused.bytesRequested() + " bytes",
                "hold " + refused.bytesInUse() + " bytes", "the index is unchanged", "raise the budget",
                "more task managers", "keyed mode", "CPU backend"}) {
                assertTrue(m.contains(part), "'" + part + "' in: " + m);
            }
            assertTrue(oracle.size() > 6 * N, "several batches fit first: " + oracle.size());
            assertTrue(ledger.bytesInUse() <= budgetBytes, "within the budget after the refusal");

            // every key answers as before the refused batch (its new keys absent, its replaced keys unreplaced)
            assertEquals(oracle.size(), gpu.size());
            compareAllGets(gpu, oracle, "after the refusal");
            final long[] refusedValues = new long[N];
            gpu.get(refusedBatch[0], N, refusedValues);
            int absent = 0;
            for (int i = 0; i < N; i++) {
                if (oracle.get(refusedBatch[0][i]) == NOT_FOUND) {
                    assertEquals(NOT_FOUND, refusedValues[i], "a new key of the refused batch is absent");
                    absent++;
                } else {
                    assertEquals(oracle.get(refusedBatch[0][i]), refusedValues[i], "a stored key keeps its value");
                }
            }
            assertTrue(absent > N / 2, "most of the refused batch's keys were new: " + absent);
            compareFloors(gpu, oracle, randomKeys(rnd), "after the refusal");

            // and the index keeps working: deletes, then replacements and re-inserts that fit in the freed nodes
            final long[] stored = storedKeys(oracle);
            for (int d = 0; d < 4; d++) {
                final long[] gone = Arrays.copyOfRange(stored, d * N, (d + 1) * N); // whole nodes empty
                shuffle(gone, rnd);
                gpu.delete(gone, N);
                oracle.delete(gone, N);
            }
            final long[] replaced = Arrays.copyOfRange(stored, 5 * N, 6 * N);
            final long[] back = Arrays.copyOfRange(stored, N, 2 * N);
            for (long[] keys : new long[][] {replaced, back}) {
                shuffle(keys, rnd);
                final long[] values = rnd.longs(N, 0, Long.MAX_VALUE).toArray();
                gpu.upsert(keys, values, N);
                oracle.upsert(keys, values, N);
            }
            assertEquals(oracle.size(), gpu.size());
            compareAllGets(gpu, oracle, "after deletes and upserts");
            compareGets(gpu, oracle, Arrays.copyOf(stored, N), "deleted and re-inserted keys");
            compareFloors(gpu, oracle, randomKeys(rnd), "after deletes and upserts");
            compareRanges(gpu, oracle, rnd, "after deletes and upserts");
            assertTrue(ledger.bytesInUse() <= budgetBytes, "within the budget at the end");
        }
        assertEquals(before, ledger.bytesInUse(), "closing gives back every byte it reserved");
    }

    /** A second index's budget counts what the first holds on the device; once the first closes, it fits. */
    @Test
    void theIndexesOfADeviceShareItsBudget() throws Exception {
        assumeGpu();
        final DeviceMemoryLedger ledger = ledger();
        final long before = ledger.bytesInUse();
        final SplittableRandom rnd = new SplittableRandom(43);
        final int large = 1 << 20;
        final long[] keys = rnd.longs(large).toArray();
        final long[] values = rnd.longs(large, 0, Long.MAX_VALUE).toArray();
        try (TreeMapOracle oracle = new TreeMapOracle()) {
            final GpuFlixIndex first = open(GpuMemoryBudget.NONE);
            try {
                first.build(keys, values, large);
                final long firstHolds = ledger.bytesInUse() - before;
                assertTrue(firstHolds >= first.stats().bytes(), "the first index's bytes are counted: " + firstHolds);
                final long budgetBytes = ledger.bytesInUse() + (8L << 20);
                try (GpuFlixIndex second = open(GpuMemoryBudget.ofBytes(budgetBytes))) {
                    final DeviceMemoryBudgetExceededException e = assertThrows(
                            DeviceMemoryBudgetExceededException.class, () -> second.build(keys, values, large));
                    assertTrue(e.bytesInUse() >= before + firstHolds, "the first index's bytes count: " + e);
                    assertEquals(budgetBytes, e.budgetBytes());
                    assertEquals(0, second.size(), "the refused build changed nothing");
                    second.upsert(new long[] {1, 2}, new long[] {10, 20}, 2);
                    assertEquals(20, value(second, 2), "a small batch fits");
                    first.close();
                    second.build(keys, values, large);
                    oracle.build(keys, values, large);
                    compareAllGets(second, oracle, "built once the first index closed");
                }
            } finally {
                first.close();
            }
        }
        assertEquals(before, ledger.bytesInUse(), "closing gives back every byte");
    }

    /** A fraction's budget is that fraction of the device's memory. */
    @Test
    void aFractionIsOfTheDevicesMemory() throws Exception {
        assumeGpu();
        final GpuRuntime.DeviceContext device = GpuRuntime.device(0);
        final long before = device.memory.bytesInUse();
        final double fraction = (before + (4L << 20)) / (double) device.totalMemory;
        final GpuMemoryBudget budget = GpuMemoryBudget.ofFraction(fraction);
        try (GpuFlixIndex gpu = open(budget)) {
            final long[] keys = new SplittableRandom(47).longs(1 << 20).toArray();
            final long[] values = new SplittableRandom(48).longs(1 << 20, 0, Long.MAX_VALUE).toArray();
            final DeviceMemoryBudgetExceededException e = assertThrows(DeviceMemoryBudgetExceededException.class,
                    () -> gpu.build(keys, values, keys.length));
            assertEquals(budget.limitOn(device.totalMemory), e.budgetBytes());
            assertTrue(e.getMessage().contains(budget.toString()), e.getMessage());
            assertEquals(0, gpu.size());
        }
        assertEquals(before, device.memory.bytesInUse());
    }

    // ---------------------------------------------------------------------------------------------------------

    /** N random keys, an eighth of them stored ones (replaced), with random values. */
    private static long[][] batch(SplittableRandom rnd, TreeMapOracle oracle) {
        final long[] stored = oracle.size() == 0 ? new long[0] : storedKeys(oracle);
        final long[] keys = new long[N];
        final long[] values = new long[N];
        for (int i = 0; i < N; i++) {
            keys[i] = i % 8 == 0 && stored.length > 0 ? stored[rnd.nextInt(stored.length)] : rnd.nextLong();
            values[i] = rnd.nextLong(Long.MAX_VALUE);
        }
        return new long[][] {keys, values};
    }

    /** The calls the checks make, at their sizes: unsorted and sorted gets, floors, deletes, ranges. */
    private static void exercise(GpuFlixIndex gpu, TreeMapOracle oracle, SplittableRandom rnd, long[] batchKeys,
                                 String where) {
        compareGets(gpu, oracle, batchKeys, where);
        final long[] sorted = batchKeys.clone();
        Arrays.sort(sorted);
        final long[] got = new long[N];
        final long[] want = new long[N];
        gpu.get(sorted, N, got, true);
        oracle.get(sorted, N, want, true);
        assertArrayEquals(want, got, where + ": sorted gets");
        compareFloors(gpu, oracle, randomKeys(rnd), where);
        final long[] absent = randomKeys(rnd); // random 64-bit keys: a delete that finds none of them
        gpu.delete(absent, N);
        oracle.delete(absent, N);
        compareRanges(gpu, oracle, rnd, where);
    }

    private static void assertShape(IndexStats want, IndexStats got, String where) {
        assertEquals(want.size(), got.size(), where + ": size");
        assertEquals(want.buckets(), got.buckets(), where + ": buckets");
        assertEquals(want.nodes(), got.nodes(), where + ": nodes");
        assertEquals(want.longestChain(), got.longestChain(), where + ": longest chain");
    }

    private static long[] storedKeys(TreeMapOracle oracle) {
        return oracle.contents().keySet().stream().mapToLong(Long::longValue).toArray();
    }

    private static long[] randomKeys(SplittableRandom rnd) {
        return rnd.longs(N).toArray();
    }

    /** Unsorted gets of every stored key, N at a time. */
    private static void compareAllGets(GpuFlixIndex gpu, TreeMapOracle oracle, String where) {
        final long[] stored = storedKeys(oracle);
        final SplittableRandom rnd = new SplittableRandom(stored.length);
        shuffle(stored, rnd);
        for (int from = 0; from < stored.length; from += N) {
            compareGets(gpu, oracle, Arrays.copyOfRange(stored, from, Math.min(stored.length, from + N)), where);
        }
    }

    private static void compareGets(GpuFlixIndex gpu, TreeMapOracle oracle, long[] keys, String where) {
        final long[] got = new long[keys.length];
        final long[] want = new long[keys.length];
        gpu.get(keys, keys.length, got);
        oracle.get(keys, keys.length, want);
        assertArrayEquals(want, got, where + ": gets");
    }

    private static void compareFloors(GpuFlixIndex gpu, TreeMapOracle oracle, long[] probes, String where) {
        final long[] gotKeys = new long[N];
        final long[] gotValues = new long[N];
        final long[] wantKeys = new long[N];
        final long[] wantValues = new long[N];
        gpu.floor(probes, N, gotKeys, gotValues);
        oracle.floor(probes, N, wantKeys, wantValues);
        assertArrayEquals(wantKeys, gotKeys, where + ": floor keys");
        assertArrayEquals(wantValues, gotValues, where + ": floor values");
    }

    /** N / 16 ranges of up to 4 keys each. */
    private static void compareRanges(GpuFlixIndex gpu, TreeMapOracle oracle, SplittableRandom rnd, String where) {
        final int n = N / 16;
        final long[] lo = new long[n];
        final long[] hi = new long[n];
        for (int i = 0; i < n; i++) {
            lo[i] = rnd.nextLong(Long.MAX_VALUE - (1L << 60)) - (1L << 62);
            hi[i] = lo[i] + (1L << 50);
        }
        final RangeResult got = gpu.range(lo, hi, n, 4);
        final RangeResult want = oracle.range(lo, hi, n, 4);
        assertArrayEquals(want.offsets(), got.offsets(), where + ": range offsets");
        assertArrayEquals(want.keys(), got.keys(), where + ": range keys");
        assertArrayEquals(want.values(), got.values(), where + ": range values");
    }

    private static long value(FlixIndex index, long key) {
        final long[] out = new long[1];
        index.get(new long[] {key}, 1, out);
        return out[0];
    }

    private static void shuffle(long[] a, SplittableRandom rnd) {
        for (int i = a.length - 1; i > 0; i--) {
            final int j = rnd.nextInt(i + 1);
            final long t = a[i];
            a[i] = a[j];
            a[j] = t;
        }
    }
}
