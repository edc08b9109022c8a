package io.flix.index.batch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.flix.index.FlixIndex;
import io.flix.index.TreeMapOracle;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * One engine, two threads: a call made while another thread's call runs is refused naming both threads, and the
 * running call completes with its own results. The first call is held inside its index lookup until the second
 * has been refused, so the overlap does not depend on timing.
 */
class MicroBatchEngineThreadsTest {

    /** A safety net for a thread that should have arrived long before; never what the test asserts. */
    private static final long STUCK_MINUTES = 1;

    @Test
    void aCallWhileAnotherThreadsCallRunsIsRefused() throws Exception {
        final TreeMapOracle oracle = new TreeMapOracle();
        oracle.build(new long[] {1, 2, 3}, new long[] {10, 20, 30}, 3);
        final CountDownLatch inLookup = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final FlixIndex heldInGet = (FlixIndex) Proxy.newProxyInstance(FlixIndex.class.getClassLoader(),
                new Class<?>[] {FlixIndex.class}, (proxy, method, args) -> {
                    if (method.getName().equals("get") && inLookup.getCount() > 0) {
                        inLookup.countDown();
                        assertTrue(release.await(STUCK_MINUTES, TimeUnit.MINUTES), "the test never released");
                    }
                    try {
                        return method.invoke(oracle, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        final MicroBatchEngine engine = new MicroBatchEngine(heldInGet);
        final OperationBatch first = new OperationBatch();
        first.get(2);
        first.upsert(4, 40);
        final ExecutorService other = Executors.newSingleThreadExecutor(r -> new Thread(r, "first caller"));
        try {
            final Future<Long> firstValue = other.submit(() -> engine.execute(first).value(0));
            assertTrue(inLookup.await(STUCK_MINUTES, TimeUnit.MINUTES), "the first call never reached the index");

            final OperationBatch second = new OperationBatch();
            second.get(4);
            final IllegalStateException refused = assertThrows(IllegalStateException.class,
                    () -> engine.execute(second), "a second thread's call while the first runs");
            assertTrue(refused.getMessage().contains("first caller")
                    && refused.getMessage().contains(Thread.currentThread().getName())
                    && refused.getMessage().contains("one thread at a time"), refused.getMessage());

            release.countDown();
            assertEquals(20, firstValue.get(STUCK_MINUTES, TimeUnit.MINUTES), "the first call's own result");
            assertEquals(40, oracle.get(4), "the first call's upsert");
            // once the first call has returned, the engine serves the next caller
            assertEquals(40, engine.execute(second).value(0));
        } finally {
            release.countDown();
            other.shutdownNow();
        }
    }
}
