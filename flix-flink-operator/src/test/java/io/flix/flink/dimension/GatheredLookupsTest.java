package io.flix.flink.dimension;

import io.flix.flink.testing.Eventually;
import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Lookups gathered across threads: batches queued while a call runs go into the next call, answered exactly. */
class GatheredLookupsTest {

    private static final long WAIT_SECONDS = 120; // a safety net, never reached when the code works

    private FlixIndex index;
    /** Index calls that looked something up. */
    private final AtomicInteger calls = new AtomicInteger();
    /** Held by the first call until the test lets it go. */
    private final CountDownLatch firstCallEntered = new CountDownLatch(1);
    private final CountDownLatch releaseFirstCall = new CountDownLatch(1);

    @BeforeEach
    void openIndex() {
        index = FlixIndex.open(new FlixConfig(Backend.CPU, FlixConfig.DEFAULT_NODE_SIZE,
                FlixConfig.DEFAULT_INITIAL_FILL, 1, 0));
        final long[] keys = new long[1000];
        final long[] values = new long[1000];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = i * 2L;
            values[i] = i * 20L;
        }
        index.build(keys, values, keys.length);
    }

    @AfterEach
    void closeIndex() {
        index.close();
    }

    /** The index, whose first lookup call waits for {@link #releaseFirstCall}. */
    private FlixIndex holdingFirstCall() {
        return (FlixIndex) Proxy.newProxyInstance(FlixIndex.class.getClassLoader(), new Class<?>[] {FlixIndex.class},
                (proxy, method, args) -> {
                    final String name = method.getName();
                    if (name.equals("get") || name.equals("floor") || name.equals("ceiling") || name.equals("range")) {
                        if (calls.incrementAndGet() == 1) {
                            firstCallEntered.countDown();
                            assertTrue(releaseFirstCall.await(WAIT_SECONDS, TimeUnit.SECONDS));
                        }
                    }
                    try {
                        return method.invoke(index, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }

    @Test
    void batchesQueuedDuringACallAreAnsweredTogetherByTheNext() throws Exception {
        final GatheredLookups lookups = new GatheredLookups(holdingFirstCall());
        final CompletableFuture<long[]> first = CompletableFuture.supplyAsync(() -> {
            final long[] out = new long[2];
            lookups.get(new long[] {2, 3}, 2, out);
            return out;
        });
        assertTrue(firstCallEntered.await(WAIT_SECONDS, TimeUnit.SECONDS));
        final List<CompletableFuture<long[]>> later = new ArrayList<>();
        final List<CompletableFuture<Integer>> gathered = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
            final long base = t * 100L;
            final CompletableFuture<Integer> size = new CompletableFuture<>();
            gathered.add(size);
            later.add(CompletableFuture.supplyAsync(() -> {
                final long[] out = new long[3];
                lookups.get(new long[] {base, base + 1, base + 2000}, 3, out);
                size.complete(lookups.lastGathered());
                return out;
            }));
        }
        awaitQueued(lookups, 3);
        releaseFirstCall.countDown();

        assertArrayEquals(new long[] {20, FlixIndex.NOT_FOUND}, first.get(WAIT_SECONDS, TimeUnit.SECONDS));
        for (int t = 0; t < 3; t++) {
            final long base = t * 100L;
            assertArrayEquals(new long[] {base * 10, FlixIndex.NOT_FOUND, FlixIndex.NOT_FOUND},
                    later.get(t).get(WAIT_SECONDS, TimeUnit.SECONDS));
            assertEquals(9, gathered.get(t).get(WAIT_SECONDS, TimeUnit.SECONDS), "gathered into one call of 9 keys");
        }
        assertEquals(2, calls.get(), "the first call, then one call for the three queued batches");
    }

    @Test
    void kindsAndRangeLimitsAreKeptApartInOneGathering() throws Exception {
        final GatheredLookups lookups = new GatheredLookups(holdingFirstCall());
        final CompletableFuture<Void> first = CompletableFuture.runAsync(
                () -> lookups.get(new long[] {0}, 1, new long[1]));
        assertTrue(firstCallEntered.await(WAIT_SECONDS, TimeUnit.SECONDS));
        final CompletableFuture<long[][]> floors = CompletableFuture.supplyAsync(() -> {
            final long[] keys = new long[2];
            final long[] values = new long[2];
            lookups.floor(new long[] {5, -1}, 2, keys, values);
            return new long[][] {keys, values};
        });
        final CompletableFuture<long[][]> ceilings = CompletableFuture.supplyAsync(() -> {
            final long[] keys = new long[2];
            final long[] values = new long[2];
            lookups.ceiling(new long[] {5, 5000}, 2, keys, values);
            return new long[][] {keys, values};
        });
        final CompletableFuture<RangeResult> narrow = CompletableFuture.supplyAsync(
                () -> lookups.range(new long[] {10, 100}, new long[] {20, 200}, 2, 2));
        final CompletableFuture<RangeResult> wide = CompletableFuture.supplyAsync(
                () -> lookups.range(new long[] {10}, new long[] {20}, 1, 10));
        awaitQueued(lookups, 4);
        releaseFirstCall.countDown();
        first.get(WAIT_SECONDS, TimeUnit.SECONDS);

        assertArrayEquals(new long[] {4, 0}, floors.get(WAIT_SECONDS, TimeUnit.SECONDS)[0]);
        assertArrayEquals(new long[] {40, FlixIndex.NOT_FOUND}, floors.get()[1]);
        assertArrayEquals(new long[] {6, 0}, ceilings.get(WAIT_SECONDS, TimeUnit.SECONDS)[0]);
        assertArrayEquals(new long[] {60, FlixIndex.NOT_FOUND}, ceilings.get()[1]);
        final RangeResult n = narrow.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertEquals(2, n.count(0));
        assertEquals(2, n.count(1));
        assertEquals(10, n.keys()[n.offsets()[0]]);
        assertEquals(12, n.keys()[n.offsets()[0] + 1]);
        assertEquals(100, n.keys()[n.offsets()[1]]);
        final RangeResult w = wide.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertEquals(6, w.count(0), "keys 10, 12, ..., 20 under its own limit of 10");
        assertEquals(4, calls.get(), "the first call, then one per kind: floor, ceiling, range");
    }

    @Test
    void aFailedCallFailsEveryBatchItAnsweredAndTheNextCallRuns() throws Exception {
        final GatheredLookups lookups = new GatheredLookups(index);
        final IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> lookups.get(null, 1, new long[1]));
        assertTrue(bad.getMessage().contains("keys"), bad.getMessage());
        final long[] out = new long[1];
        lookups.get(new long[] {4}, 1, out);
        assertEquals(40, out[0]);
        assertSame(1, lookups.lastGathered());
    }

    private static void awaitQueued(GatheredLookups lookups, int batches) throws Exception {
        Eventually.await(batches + " batches queued", () -> lookups.queued() >= batches);
    }
}
