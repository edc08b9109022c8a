package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.GpuMemoryBudget;
import io.flix.index.RangeResult;
import io.flix.index.TreeMapOracle;

import java.util.Arrays;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Device memory that a closed index frees is kept for the next index on the device (DeviceMemoryLedger): the next
 * index takes it instead of asking the device, answers as a fresh one would (nothing of the closed index's data
 * shows through), and gives way to a budget that needs the room. Skips where no GPU is usable.
 */
class GpuKeptMemoryTest {

    private static void assumeGpu() {
        Assumptions.assumeTrue(GpuSupport.isAvailable(), GpuSupport.unavailableReason());
    }

    private static GpuFlixIndex open(GpuMemoryBudget budget) {
        return GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).gpuMemoryBudget(budget).build());
    }

    /** n keys of one parity (even or odd), shuffled, and values that name them. */
    private static long[][] pairs(int n, int parity, long seed) {
        final SplittableRandom rnd = new SplittableRandom(seed);
        final long[] keys = new long[n];
        final long[] values = new long[n];
        for (int i = 0; i < n; i++) {
            keys[i] = (rnd.nextLong(-(1L << 40), 1L << 40) & ~1L) | parity;
            values[i] = keys[i] * 3 + 1;
        }
        return new long[][] {keys, values};
    }

    @Test
    void anIndexOpenedAfterAnotherClosedTakesItsMemoryAndSeesNoneOfItsData() throws Exception {
        assumeGpu();
        final DeviceMemoryLedger ledger = GpuRuntime.device(0).memory;
        assertTrue(ledger.keepLimit() > 0, "memory is kept by default: " + ledger.keepLimit());
        final int n = 1 << 18;
        final long[][] even = pairs(n, 0, 5);
        final long[][] odd = pairs(n, 1, 6);
        final long allocationsBefore = DeviceBuffer.liveAllocations();
        final long bytesBefore = DeviceBuffer.liveBytes();
        try (GpuFlixIndex first = open(GpuMemoryBudget.NONE)) {
            first.build(even[0], even[1], n);
            first.upsert(odd[0], odd[1], n / 2);
            first.get(even[0], n, new long[n]);
        }
        assertEquals(allocationsBefore, DeviceBuffer.liveAllocations(), "the closed index holds nothing");
        assertEquals(bytesBefore, DeviceBuffer.liveBytes());
        final long keptAfterFirst = ledger.bytesKept();
        assertTrue(keptAfterFirst > 16L * n, "its node arrays and batch scratch are kept: " + keptAfterFirst);
        try (GpuFlixIndex second = open(GpuMemoryBudget.NONE); TreeMapOracle oracle = new TreeMapOracle()) {
            second.build(odd[0], odd[1], n);
            oracle.build(odd[0], odd[1], n);
            assertTrue(ledger.bytesKept() < keptAfterFirst, "the second index took kept memory: "
                    + ledger.bytesKept() + " of " + keptAfterFirst);
            assertEquals(oracle.size(), second.size());
            final long[] queries = new long[2 * n];
            System.arraycopy(even[0], 0, queries, 0, n);
            System.arraycopy(odd[0], 0, queries, n, n);
            assertSameAnswers(oracle, second, queries, "after the build");
            second.upsert(even[0], even[1], n / 4);
            oracle.upsert(even[0], even[1], n / 4);
            second.delete(odd[0], n / 8);
            oracle.delete(odd[0], n / 8);
            assertSameAnswers(oracle, second, queries, "after upserts and deletes");
        }
        assertEquals(allocationsBefore, DeviceBuffer.liveAllocations());
        assertTrue(ledger.bytesKept() > 0);
    }

    private static void assertSameAnswers(TreeMapOracle oracle, GpuFlixIndex gpu, long[] queries, String when) {
        final int m = queries.length;
        final long[] want = new long[m];
        final long[] got = new long[m];
        oracle.get(queries, m, want);
        gpu.get(queries, m, got);
        assertArrayEquals(want, got, "gets " + when);
        final long[] wantKeys = new long[m];
        final long[] gotKeys = new long[m];
        oracle.ceiling(queries, m, wantKeys, want);
        gpu.ceiling(queries, m, gotKeys, got);
        assertArrayEquals(wantKeys, gotKeys, "ceiling keys " + when);
        assertArrayEquals(want, got, "ceiling values " + when);
        final int ranges = 1000;
        final long[] lo = new long[ranges];
        final long[] hi = new long[ranges];
        for (int i = 0; i < ranges; i++) {
            lo[i] = queries[i * 37 % m] - (1L << 24);
            hi[i] = lo[i] + (1L << 26);
        }
        final RangeResult wantRanges = oracle.range(lo, hi, ranges, 64);
        final RangeResult gotRanges = gpu.range(lo, hi, ranges, 64);
        final int pairs = wantRanges.offsets()[ranges];
        assertArrayEquals(wantRanges.offsets(), Arrays.copyOf(gotRanges.offsets(), ranges + 1),
                "range offsets " + when);
        assertArrayEquals(Arrays.copyOf(wantRanges.keys(), pairs), Arrays.copyOf(gotRanges.keys(), pairs),
                "range keys " + when);
        assertArrayEquals(Arrays.copyOf(wantRanges.values(), pairs), Arrays.copyOf(gotRanges.values(), pairs),
                "range values " + when);
    }

    @Test
    void aBufferTakenFromALargerKeptBlockReportsItsOwnBytesAndTheLedgerCountsTheBlock() throws Exception {
        assumeGpu();
        final DeviceMemoryLedger ledger = GpuRuntime.device(0).memory; // the context current on this thread
        ledger.freeAllKept();
        final DeviceMemoryLedger.Account closing = ledger.account(GpuMemoryBudget.NONE);
        final DeviceBuffer first = DeviceBuffer.allocate(closing, 8000, "a test buffer");
        final long address = first.address();
        final long inUse = ledger.bytesInUse();
        final long live = DeviceBuffer.liveBytes();
        closing.end();
        first.close();
        assertEquals(inUse - 8000, ledger.bytesInUse());
        assertEquals(8000, ledger.bytesKept());
        assertEquals(live - 8000, DeviceBuffer.liveBytes());
        try (DeviceBuffer second = DeviceBuffer.allocate(ledger.account(GpuMemoryBudget.NONE), 7000,
                "a test buffer")) {
            assertEquals(address, second.address(), "the kept block, not a new allocation");
            assertEquals(7000, second.bytes(), "the bytes asked for");
            assertEquals(inUse, ledger.bytesInUse(), "the whole block is counted");
            assertEquals(0, ledger.bytesKept());
            assertEquals(live, DeviceBuffer.liveBytes());
        }
        assertEquals(inUse - 8000, ledger.bytesInUse());
        assertEquals(live - 8000, DeviceBuffer.liveBytes());
    }

    @Test
    void keptMemoryGivesWayToABudgetThatNeedsTheRoom() throws Exception {
        assumeGpu();
        final DeviceMemoryLedger ledger = GpuRuntime.device(0).memory;
        final int n = 1 << 20;
        final long[][] pairs = pairs(n, 0, 7);
        try (GpuFlixIndex large = open(GpuMemoryBudget.NONE)) {
            large.build(pairs[0], pairs[1], n);
        }
        final long kept = ledger.bytesKept();
        assertTrue(kept > 32L << 20, "kept " + kept);
        // room for a small index only if the kept memory gives way
        final long budget = ledger.bytesInUse() + kept / 2;
        try (GpuFlixIndex small = open(GpuMemoryBudget.ofBytes(budget)); TreeMapOracle oracle = new TreeMapOracle()) {
            final int m = 1 << 16;
            final long[][] few = pairs(m, 1, 8);
            small.build(few[0], few[1], m);
            oracle.build(few[0], few[1], m);
            assertTrue(ledger.bytesInUse() + ledger.bytesKept() <= budget, "held " + ledger.bytesInUse()
                    + " and kept " + ledger.bytesKept() + " within the budget " + budget);
            final long[] want = new long[m];
            final long[] got = new long[m];
            oracle.get(few[0], m, want);
            small.get(few[0], m, got);
            assertArrayEquals(want, got);
        }
    }
}
