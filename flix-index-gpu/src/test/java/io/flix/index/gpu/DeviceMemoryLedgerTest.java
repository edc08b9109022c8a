package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.GpuMemoryBudget;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The device memory ledger without a device: reservations within a budget, refusals that reserve nothing and name
 * the sizes, budgets shared by the accounts of one device, random sequences against a model, and reservations from
 * several threads at once (invariants that hold for every interleaving).
 */
class DeviceMemoryLedgerTest {

    private static final String DEVICE = "device 0 (Test GPU, 1000 bytes)";

    @Test
    void reservesWithinTheBudgetAndRefusesBeyondItReservingNothing() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1000);
        final DeviceMemoryLedger.Account account = ledger.account(GpuMemoryBudget.ofBytes(600));
        assertEquals(400, account.reserve(400, "node keys"));
        assertEquals(600, account.reserve(200, "node values"));
        final DeviceMemoryBudgetExceededException e = assertThrows(DeviceMemoryBudgetExceededException.class,
                () -> account.reserve(1, "bucket heads (7 buckets)"));
        assertEquals(600, e.budgetBytes());
        assertEquals(600, e.bytesInUse());
        assertEquals(1, e.bytesRequested());
        assertEquals(600, ledger.bytesInUse(), "a refusal reserves nothing");
        assertEquals(400, account.release(200));
        assertEquals(600, account.reserve(200, "node values"), "room again after a release");
        assertEquals(600, account.reserve(0, "nothing"), "an empty reservation always fits");
    }

    @Test
    void theRefusalNamesTheBudgetTheBytesInUseAndAskedForAndWhatToDo() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1000);
        final DeviceMemoryLedger.Account account = ledger.account(GpuMemoryBudget.ofFraction(0.5));
        account.reserve(300, "node keys");
        final DeviceMemoryBudgetExceededException e = assertThrows(DeviceMemoryBudgetExceededException.class,
                () -> account.reserve(250, "free node stack (2048 nodes of 32)"));
        final String m = e.getMessage();
        for (String part : new String[] {DEVICE, "free node stack (2048 nodes of 32) asks for 250 bytes",
            "hold 300 bytes", "the budget is 50% of the device's memory = 500 bytes", "the index is unchanged",
            "raise the budget", "'index.gpu-memory-budget'", "more task managers", "keyed mode", "CPU backend"}) {
            assertTrue(m.contains(part), "'" + part + "' in: " + m);
        }
        assertEquals(500, e.budgetBytes());
        assertTrue(e instanceof GpuOutOfMemoryException, "callers that handle running out handle this too");
    }

    @Test
    void theAccountsOfADeviceShareItsBytesEachWithinItsOwnBudget() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1000);
        final DeviceMemoryLedger.Account unbudgeted = ledger.account(GpuMemoryBudget.NONE);
        final DeviceMemoryLedger.Account small = ledger.account(GpuMemoryBudget.ofBytes(500));
        final DeviceMemoryLedger.Account large = ledger.account(GpuMemoryBudget.ofBytes(800));
        assertEquals(Long.MAX_VALUE, unbudgeted.limit());
        unbudgeted.reserve(450, "device longs");
        final DeviceMemoryBudgetExceededException e = assertThrows(DeviceMemoryBudgetExceededException.class,
                () -> small.reserve(100, "batch keys"));
        assertEquals(450, e.bytesInUse(), "what the other accounts hold counts");
        assertEquals(750, large.reserve(300, "batch keys"));
        assertEquals(2750, unbudgeted.reserve(2000, "device longs"), "no budget: only the device limits");
        assertThrows(DeviceMemoryBudgetExceededException.class, () -> large.reserve(1, "batch keys"));
        assertEquals(2750, ledger.bytesInUse());
    }

    @Test
    void releasingMoreThanIsReservedIsAnError() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1000);
        final DeviceMemoryLedger.Account account = ledger.account(GpuMemoryBudget.NONE);
        account.reserve(10, "counters");
        final IllegalStateException e = assertThrows(IllegalStateException.class, () -> account.release(11));
        assertTrue(e.getMessage().contains("releasing 11 bytes of " + DEVICE + ", which has 10 reserved"),
                e.getMessage());
        assertEquals(10, ledger.bytesInUse());
        assertThrows(IllegalArgumentException.class, () -> account.reserve(-1, "counters"));
    }

    /** Random reservations and releases over accounts of different budgets, against a model of the ledger. */
    @Test
    void randomSequencesMatchAModel() {
        for (long seed = 1; seed <= 20; seed++) {
            final SplittableRandom rnd = new SplittableRandom(seed);
            final long deviceBytes = 1 + rnd.nextLong(1L << 40);
            final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, deviceBytes);
            final GpuMemoryBudget[] budgets = {GpuMemoryBudget.NONE,
                GpuMemoryBudget.ofFraction(0.25 + rnd.nextDouble() * 0.75),
                GpuMemoryBudget.ofBytes(1 + rnd.nextLong(deviceBytes)), GpuMemoryBudget.ofFraction(1)};
            final List<DeviceMemoryLedger.Account> accounts = new ArrayList<>();
            for (GpuMemoryBudget b : budgets) {
                accounts.add(ledger.account(b));
            }
            final List<long[]> held = new ArrayList<>(); // {account, bytes}
            long modelInUse = 0;
            for (int step = 0; step < 5_000; step++) {
                if (held.isEmpty() || rnd.nextInt(3) > 0) {
                    final int a = rnd.nextInt(accounts.size());
                    final long limit = budgets[a].limitOn(deviceBytes);
                    final long bytes = rnd.nextInt(4) == 0 ? rnd.nextLong(deviceBytes + 1)
                            : rnd.nextLong(1 + deviceBytes / 64);
                    if (modelInUse + bytes <= limit) {
                        assertEquals(modelInUse + bytes, accounts.get(a).reserve(bytes, "step " + step),
                                "seed " + seed + " step " + step);
                        modelInUse += bytes;
                        held.add(new long[] {a, bytes});
                    } else {
                        final long before = modelInUse;
                        final DeviceMemoryBudgetExceededException e = assertThrows(
                                DeviceMemoryBudgetExceededException.class,
                                () -> accounts.get(a).reserve(bytes, "step"), "seed " + seed);
                        assertEquals(before, e.bytesInUse());
                        assertEquals(bytes, e.bytesRequested());
                        assertEquals(limit, e.budgetBytes());
                    }
                } else {
                    final long[] h = held.remove(rnd.nextInt(held.size()));
                    modelInUse -= h[1];
                    assertEquals(modelInUse, accounts.get((int) h[0]).release(h[1]));
                }
                assertEquals(modelInUse, ledger.bytesInUse(), "seed " + seed + " step " + step);
            }
            for (long[] h : held) {
                accounts.get((int) h[0]).release(h[1]);
            }
            assertEquals(0, ledger.bytesInUse(), "everything released: seed " + seed);
        }
    }

    /**
     * Threads reserve and release at once through accounts of two budgets. Whatever the interleaving: every
     * reservation that succeeds leaves the bytes in use within its account's budget, every refusal saw bytes in
     * use that the request would have taken past it, and at the end the ledger holds exactly what the threads hold.
     */
    @Test
    void concurrentReservationsNeverPassABudgetAndAddUp() throws Exception {
        final int threads = 8;
        final long deviceBytes = 1L << 20;
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, deviceBytes);
        final DeviceMemoryLedger.Account tight = ledger.account(GpuMemoryBudget.ofBytes(deviceBytes / 2));
        final DeviceMemoryLedger.Account loose = ledger.account(GpuMemoryBudget.ofFraction(0.75));
        final Queue<String> violations = new ConcurrentLinkedQueue<>();
        final CountDownLatch start = new CountDownLatch(1);
        final ExecutorService pool = Executors.newFixedThreadPool(threads);
        final List<Future<long[]>> results = new ArrayList<>();
        try {
            for (int t = 0; t < threads; t++) {
                final int thread = t;
                results.add(pool.submit(() -> {
                    final SplittableRandom rnd = new SplittableRandom(100 + thread);
                    final DeviceMemoryLedger.Account account = thread % 2 == 0 ? tight : loose;
                    final ArrayDeque<Long> mine = new ArrayDeque<>();
                    long refusals = 0;
                    start.await();
                    for (int i = 0; i < 50_000; i++) {
                        if (mine.isEmpty() || rnd.nextInt(5) < 3) {
                            final long bytes = 1 + rnd.nextLong(deviceBytes / 32);
                            try {
                                final long after = account.reserve(bytes, "thread " + thread);
                                if (after > account.limit()) {
                                    violations.add("reserved to " + after + " past " + account.limit());
                                }
                                mine.push(bytes);
                            } catch (DeviceMemoryBudgetExceededException e) {
                                refusals++;
                                if (e.bytesInUse() + e.bytesRequested() <= e.budgetBytes()) {
                                    violations.add("refused although it fit: " + e.getMessage());
                                }
                            }
                        } else {
                            account.release(mine.pop());
                        }
                    }
                    long heldBytes = 0;
                    for (long b : mine) {
                        heldBytes += b;
                    }
                    return new long[] {heldBytes, refusals};
                }));
            }
            start.countDown();
            long heldByThreads = 0;
            long refusals = 0;
            for (Future<long[]> r : results) {
                final long[] got = r.get(120, TimeUnit.SECONDS); // a safety net, not a timing
                heldByThreads += got[0];
                refusals += got[1];
            }
            assertTrue(violations.isEmpty(), violations.toString());
            assertEquals(heldByThreads, ledger.bytesInUse());
            assertTrue(ledger.bytesInUse() <= loose.limit(), "within the larger budget: " + ledger.bytesInUse());
            assertTrue(refusals > 0, "the threads filled the budgets");
            loose.release(ledger.bytesInUse());
            assertEquals(0, ledger.bytesInUse());
        } finally {
            pool.shutdownNow();
        }
    }
}
