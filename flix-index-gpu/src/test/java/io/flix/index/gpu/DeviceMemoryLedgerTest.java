package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.GpuMemoryBudget;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
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
 * several threads at once (invariants that hold for every interleaving); memory that closed indexes free, kept
 * for the next ones within the keep limit and every budget.
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

    // -------------------------------------------------------------------------------------------------------------
    // Memory kept for reuse

    private static final String PLAIN = "plain";

    /** A block of {@code bytes} whose free adds its memory to {@code freed}. */
    private static DeviceMemoryLedger.KeptBlock block(String kind, long bytes, Queue<Object> freed) {
        final Object memory = new Object();
        return new DeviceMemoryLedger.KeptBlock(kind, bytes, memory, () -> freed.add(memory));
    }

    /** An ended account holding {@code bytes}, as a closing index's is. */
    private static DeviceMemoryLedger.Account endedHolding(DeviceMemoryLedger ledger, long bytes) {
        final DeviceMemoryLedger.Account account = ledger.account(GpuMemoryBudget.NONE);
        account.reserve(bytes, "node keys");
        account.end();
        return account;
    }

    @Test
    void anEndedAccountsMemoryIsKeptAndTakenByTheNextAccount() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1000, 400);
        final Queue<Object> freed = new ConcurrentLinkedQueue<>();
        final DeviceMemoryLedger.KeptBlock kept = block(PLAIN, 300, freed);
        assertTrue(endedHolding(ledger, 300).keep(kept));
        assertEquals(0, ledger.bytesInUse(), "the ended index holds nothing");
        assertEquals(300, ledger.bytesKept());
        final DeviceMemoryLedger.Account next = ledger.account(GpuMemoryBudget.NONE);
        assertSame(kept, next.take(PLAIN, 240, 300), "a request up to a fifth smaller takes it");
        assertEquals(300, ledger.bytesInUse(), "its bytes are the taker's");
        assertEquals(0, ledger.bytesKept());
        assertNull(next.take(PLAIN, 1, 1000), "taken once");
        assertTrue(freed.isEmpty(), "the device got nothing back: the memory is in use again");
    }

    @Test
    void anAccountThatHasNotEndedKeepsNothing() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1000, 400);
        final DeviceMemoryLedger.Account open = ledger.account(GpuMemoryBudget.NONE);
        open.reserve(100, "batch keys");
        assertFalse(open.ended());
        assertFalse(open.keep(block(PLAIN, 100, new ConcurrentLinkedQueue<>())), "work may still reach it");
        assertEquals(100, ledger.bytesInUse());
        assertEquals(0, ledger.bytesKept());
        final DeviceMemoryLedger keepsNone = new DeviceMemoryLedger(DEVICE, 1000);
        assertFalse(endedHolding(keepsNone, 100).keep(block(PLAIN, 100, new ConcurrentLinkedQueue<>())),
                "a ledger with no keep limit keeps nothing");
    }

    @Test
    void theSmallestBlockOfTheKindInTheSizeWindowIsTaken() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 10_000, 10_000);
        final Queue<Object> freed = new ConcurrentLinkedQueue<>();
        final DeviceMemoryLedger.Account closing = endedHolding(ledger, 600);
        final DeviceMemoryLedger.KeptBlock b100 = block(PLAIN, 100, freed);
        final DeviceMemoryLedger.KeptBlock b200 = block(PLAIN, 200, freed);
        final DeviceMemoryLedger.KeptBlock b150 = block(PLAIN, 150, freed);
        final DeviceMemoryLedger.KeptBlock mapped = block("mapped 4096", 150, freed);
        for (DeviceMemoryLedger.KeptBlock b : List.of(b100, b200, b150, mapped)) {
            assertTrue(closing.keep(b));
        }
        final DeviceMemoryLedger.Account next = ledger.account(GpuMemoryBudget.NONE);
        assertNull(next.take(PLAIN, 210, 300), "none large enough");
        assertNull(next.take(PLAIN, 10, 99), "none small enough");
        assertNull(next.take("mapped 8192", 1, 1000), "none of the kind");
        assertSame(b150, next.take(PLAIN, 120, 260));
        assertSame(b200, next.take(PLAIN, 120, 260));
        assertSame(mapped, next.take("mapped 4096", 0, Long.MAX_VALUE));
        assertEquals(500, ledger.bytesInUse());
        assertEquals(100, ledger.bytesKept());
        assertTrue(freed.isEmpty());
    }

    @Test
    void theKeepLimitFreesTheOldestAndLeavesABlockLargerThanItToTheCaller() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 10_000, 400);
        final Queue<Object> freed = new ConcurrentLinkedQueue<>();
        final DeviceMemoryLedger.Account closing = endedHolding(ledger, 950);
        final DeviceMemoryLedger.KeptBlock oldest = block(PLAIN, 200, freed);
        final DeviceMemoryLedger.KeptBlock middle = block(PLAIN, 150, freed);
        assertTrue(closing.keep(oldest));
        assertTrue(closing.keep(middle));
        assertTrue(closing.keep(block(PLAIN, 100, freed)), "room made by freeing the oldest");
        assertEquals(List.of(oldest.memory()), List.copyOf(freed));
        assertEquals(250, ledger.bytesKept());
        assertFalse(closing.keep(block(PLAIN, 500, freed)), "larger than the limit: the caller frees it");
        assertEquals(250, ledger.bytesKept());
        assertEquals(500, ledger.bytesInUse(), "still the closing account's, for the caller to release");
        assertEquals(1, freed.size());
    }

    @Test
    void aReservationPastABudgetFreesKeptMemoryFirstOldestFirstAndOnlyWhatItNeeds() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 10_000, 10_000);
        final Queue<Object> freed = new ConcurrentLinkedQueue<>();
        final DeviceMemoryLedger.Account closing = endedHolding(ledger, 300);
        final List<DeviceMemoryLedger.KeptBlock> blocks = List.of(block(PLAIN, 100, freed),
                block(PLAIN, 100, freed), block(PLAIN, 100, freed));
        for (DeviceMemoryLedger.KeptBlock b : blocks) {
            assertTrue(closing.keep(b));
        }
        final DeviceMemoryLedger.Account budgeted = ledger.account(GpuMemoryBudget.ofBytes(500));
        assertEquals(350, budgeted.reserve(350, "node keys"), "the kept bytes gave way");
        assertEquals(List.of(blocks.get(0).memory(), blocks.get(1).memory()), List.copyOf(freed),
                "the two oldest, enough for 350 within 500");
        assertEquals(100, ledger.bytesKept());
        final DeviceMemoryBudgetExceededException e = assertThrows(DeviceMemoryBudgetExceededException.class,
                () -> budgeted.reserve(151, "node values"));
        assertEquals(350, e.bytesInUse(), "refused for the indexes' own bytes, all kept memory freed first");
        assertEquals(0, ledger.bytesKept());
        assertEquals(350, ledger.bytesInUse(), "a refusal reserves nothing");
        assertEquals(3, freed.size());
    }

    @Test
    void aTakenBlockCountsWithinTheTakersBudget() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 10_000, 10_000);
        final Queue<Object> freed = new ConcurrentLinkedQueue<>();
        final DeviceMemoryLedger.Account closing = endedHolding(ledger, 400);
        final DeviceMemoryLedger.KeptBlock large = block(PLAIN, 300, freed);
        final DeviceMemoryLedger.KeptBlock other = block(PLAIN, 100, freed);
        assertTrue(closing.keep(large));
        assertTrue(closing.keep(other));
        assertNull(ledger.account(GpuMemoryBudget.ofBytes(200)).take(PLAIN, 300, 300),
                "the block alone passes the budget");
        assertEquals(400, ledger.bytesKept(), "nothing changed");
        assertEquals(0, ledger.bytesInUse());
        assertTrue(freed.isEmpty());
        assertSame(large, ledger.account(GpuMemoryBudget.ofBytes(350)).take(PLAIN, 300, 300));
        assertEquals(List.of(other.memory()), List.copyOf(freed), "the other kept block gave way");
        assertEquals(300, ledger.bytesInUse());
        assertEquals(0, ledger.bytesKept());
    }

    @Test
    void freeAllKeptGivesEveryKeptBlockBack() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 10_000, 10_000);
        final Queue<Object> freed = new ConcurrentLinkedQueue<>();
        final DeviceMemoryLedger.Account closing = endedHolding(ledger, 700);
        assertTrue(closing.keep(block(PLAIN, 300, freed)));
        assertTrue(closing.keep(block("mapped 4096", 400, freed)));
        assertEquals(700, ledger.freeAllKept());
        assertEquals(2, freed.size());
        assertEquals(0, ledger.bytesKept());
        assertEquals(0, ledger.freeAllKept());
    }

    /**
     * Threads keep, take and free blocks and reserve bytes at once. Whatever the interleaving: no block is held by
     * two threads at once, none is taken after the device got it back, none is given back twice, and at the end the
     * bytes held and kept are exactly what the threads hold and the blocks kept.
     */
    @Test
    void concurrentKeepsAndTakesNeverShareABlockAndAddUp() throws Exception {
        final int threads = 8;
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1L << 20, 1L << 16);
        final Set<Object> held = ConcurrentHashMap.newKeySet();
        final Set<Object> freedOnce = ConcurrentHashMap.newKeySet();
        final Queue<String> violations = new ConcurrentLinkedQueue<>();
        final CountDownLatch start = new CountDownLatch(1);
        final ExecutorService pool = Executors.newFixedThreadPool(threads);
        final List<Future<Long>> results = new ArrayList<>();
        try {
            for (int t = 0; t < threads; t++) {
                final int thread = t;
                results.add(pool.submit(() -> {
                    final SplittableRandom rnd = new SplittableRandom(200 + thread);
                    final DeviceMemoryLedger.Account account = ledger.account(thread % 2 == 0
                            ? GpuMemoryBudget.ofBytes(3L << 17) : GpuMemoryBudget.NONE);
                    account.end(); // its blocks may be kept (no device work here)
                    final ArrayDeque<DeviceMemoryLedger.KeptBlock> mine = new ArrayDeque<>();
                    start.await();
                    for (int i = 0; i < 20_000; i++) {
                        final int op = rnd.nextInt(3);
                        final String kind = rnd.nextBoolean() ? PLAIN : "mapped 4096";
                        if (op == 0) {
                            final DeviceMemoryLedger.KeptBlock b = account.take(kind, 1, Long.MAX_VALUE);
                            if (b != null && !held.add(b.memory())) {
                                violations.add("taken while held: " + b);
                            }
                            if (b != null && freedOnce.contains(b.memory())) {
                                violations.add("taken after it was freed: " + b);
                            }
                            if (b != null) {
                                mine.push(b);
                            }
                        } else if (op == 1 || mine.isEmpty()) {
                            final long bytes = 1 + rnd.nextInt(1 << 12);
                            try {
                                account.reserve(bytes, "thread " + thread);
                                final Object memory = new Object();
                                held.add(memory);
                                mine.push(new DeviceMemoryLedger.KeptBlock(kind, bytes, memory, () -> {
                                    if (!freedOnce.add(memory)) {
                                        violations.add("freed twice");
                                    }
                                }));
                            } catch (DeviceMemoryBudgetExceededException e) {
                                // the budget is full of held memory: fine
                            }
                        } else {
                            final DeviceMemoryLedger.KeptBlock b = mine.pop();
                            held.remove(b.memory());
                            if (!account.keep(b)) {
                                account.release(b.bytes());
                                b.free().run();
                            }
                        }
                    }
                    long bytes = 0;
                    for (DeviceMemoryLedger.KeptBlock b : mine) {
                        bytes += b.bytes();
                    }
                    return bytes;
                }));
            }
            start.countDown();
            long heldByThreads = 0;
            for (Future<Long> r : results) {
                heldByThreads += r.get(120, TimeUnit.SECONDS); // a safety net, not a timing
            }
            assertTrue(violations.isEmpty(), violations.toString());
            assertEquals(heldByThreads, ledger.bytesInUse());
            assertTrue(ledger.bytesKept() <= ledger.keepLimit(), "kept " + ledger.bytesKept());
            ledger.freeAllKept();
            assertEquals(0, ledger.bytesKept());
            assertTrue(violations.isEmpty(), violations.toString());
        } finally {
            pool.shutdownNow();
        }
    }

    // -------------------------------------------------------------------------------------------------------------
    // Releases an open index puts off

    /** An index's account holding {@code bytes}; each put-off release gives back its own bytes, as a buffer's does. */
    private static DeviceMemoryLedger.Account indexHolding(DeviceMemoryLedger ledger, GpuMemoryBudget budget,
                                                           long bytes) {
        final DeviceMemoryLedger.Account account = ledger.indexAccount(budget);
        account.reserve(bytes, "bucket heads");
        return account;
    }

    @Test
    void anOpenIndexPutsOffReleasesUntilItsAccountEndsAndTheBytesStayReservedMeanwhile() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1000);
        final DeviceMemoryLedger.Account index = indexHolding(ledger, GpuMemoryBudget.NONE, 300);
        final List<String> released = new ArrayList<>();
        assertTrue(index.putOff(100, () -> released.add("empty pool")));
        assertTrue(index.putOff(50, () -> released.add("one bucket")));
        assertEquals(150, index.bytesPutOff());
        assertEquals(300, ledger.bytesInUse(), "reserved until released");
        assertTrue(released.isEmpty());
        index.end();
        assertEquals(List.of("empty pool", "one bucket"), released, "released once, in order, when it ends");
        assertEquals(0, index.bytesPutOff());
        assertFalse(index.putOff(10, () -> released.add("late")), "an ended account releases at once");
        index.releasePutOff();
        assertEquals(2, released.size());
    }

    @Test
    void onlyAnIndexAccountPutsOffAndOnlyUpToTheLimit() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1L << 40);
        final DeviceMemoryLedger.Account caller = ledger.account(GpuMemoryBudget.NONE);
        caller.reserve(100, "a caller's device array");
        assertFalse(caller.putOff(100, () -> { }), "a caller's account never ends: nothing would release it");
        final DeviceMemoryLedger.Account index = indexHolding(ledger, GpuMemoryBudget.NONE,
                DeviceMemoryLedger.PUT_OFF_LIMIT + 1);
        assertFalse(index.putOff(DeviceMemoryLedger.PUT_OFF_LIMIT + 1, () -> { }), "past the limit");
        assertTrue(index.putOff(DeviceMemoryLedger.PUT_OFF_LIMIT, () -> { }));
        assertFalse(index.putOff(1, () -> { }), "the limit is of all the bytes put off");
        assertEquals(DeviceMemoryLedger.PUT_OFF_LIMIT, index.bytesPutOff());
    }

    @Test
    void aReservationPastTheBudgetReleasesWhatWasPutOffFirst() {
        final DeviceMemoryLedger ledger = new DeviceMemoryLedger(DEVICE, 1000);
        final DeviceMemoryLedger.Account index = indexHolding(ledger, GpuMemoryBudget.ofBytes(500), 400);
        final List<String> released = new ArrayList<>();
        assertTrue(index.putOff(300, () -> {
            released.add("outgrown scratch");
            index.release(300);
        }));
        assertEquals(400, index.reserve(300, "grown scratch"), "room made by the release put off");
        assertEquals(List.of("outgrown scratch"), released);
        assertEquals(0, index.bytesPutOff());
        final DeviceMemoryBudgetExceededException e = assertThrows(DeviceMemoryBudgetExceededException.class,
                () -> index.reserve(101, "node keys"));
        assertEquals(400, e.bytesInUse(), "refused once nothing is left to release");
        assertEquals(1, released.size());
    }
}
