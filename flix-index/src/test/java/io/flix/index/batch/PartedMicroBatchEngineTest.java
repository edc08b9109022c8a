package io.flix.index.batch;

import io.flix.index.FlixIndex;
import io.flix.index.TreeMapOracle;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The micro-batch engine's differential suite on the CPU backend with threads lent to the engine and every batch of
 * gets and updates, however small, walked in parts by key on them: the same answers and final state as the sequential
 * oracle, and the same index calls as one walk.
 */
class PartedMicroBatchEngineTest extends CpuMicroBatchEngineTest {

    private static final ExecutorService THREADS = Executors.newFixedThreadPool(4);

    /** Runs the parts on a pool of four threads, counting calls and parts. */
    static final class PoolParts implements ParallelParts {
        final AtomicInteger calls = new AtomicInteger();
        final AtomicInteger partsRun = new AtomicInteger();

        @Override
        public int parallelism() {
            return 4;
        }

        @Override
        public void run(int parts, IntConsumer part) {
            calls.incrementAndGet();
            final List<Future<?>> running = new ArrayList<>(parts);
            for (int p = 0; p < parts; p++) {
                final int index = p;
                running.add(THREADS.submit(() -> {
                    part.accept(index);
                    partsRun.incrementAndGet();
                }));
            }
            RuntimeException failure = null;
            for (Future<?> f : running) {
                try {
                    f.get();
                } catch (ExecutionException e) {
                    if (failure == null) {
                        failure = e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
            if (failure != null) {
                throw failure;
            }
        }
    }

    @AfterAll
    static void stopThreads() {
        THREADS.shutdownNow();
    }

    @Override
    protected MicroBatchEngine newEngine(FlixIndex index, MicroBatchEngine.Sorting sorting) {
        return new MicroBatchEngine(index, sorting, new PoolParts(), 1);
    }

    @Test
    void aLargeBatchOfGetsAndUpdatesIsWalkedInPartsOnTheLentThreadsAndMatchesTheOracle() {
        final PoolParts parts = new PoolParts();
        final TreeMapOracle oracle = new TreeMapOracle();
        try (FlixIndex index = openIndex()) {
            final MicroBatchEngine engine = new MicroBatchEngine(index, parts);
            final OperationBatch batch = new OperationBatch();
            // a row store's pattern: each upsert after a get of its key (the row it replaces); some keys twice
            final int pairs = MicroBatchEngine.PARALLEL_MIN_UPDATES + 1000;
            for (int i = 0; i < pairs; i++) {
                final long key = (i % 7 == 0 ? i / 2 : i) * 0x9E3779B97F4A7C15L;
                batch.get(key);
                batch.upsert(key, i);
            }
            final List<Long> expected = new ArrayList<>();
            for (int i = 0; i < batch.size(); i++) {
                if (batch.kind(i) == OperationBatch.GET) {
                    expected.add(oracle.get(batch.key(i)));
                } else {
                    oracle.upsert(new long[] {batch.key(i)}, new long[] {batch.value(i)}, 1, true);
                }
            }
            final BatchResults results = engine.execute(batch);
            assertEquals(1, parts.calls.get(), "one walk in parts");
            assertEquals(8, parts.partsRun.get(), "twice the lent threads' parallelism");
            int g = 0;
            for (int i = 0; i < batch.size(); i++) {
                if (batch.kind(i) == OperationBatch.GET) {
                    assertEquals((long) expected.get(g++), results.value(i), "get at " + i);
                }
            }
            MicroBatchEngineTest.assertSameContents(oracle, index, "after the walk in parts");

            batch.clear();
            for (int i = 0; i < 100; i++) {
                batch.get(i);
                batch.upsert(i, i);
            }
            engine.execute(batch);
            assertEquals(1, parts.calls.get(), "a batch below the threshold is walked on the caller's thread");
        }
    }

    @Test
    void aPartThatFailsFailsTheBatch() {
        final IllegalStateException broken = new IllegalStateException("a lent thread broke");
        final ParallelParts failing = new ParallelParts() {
            @Override
            public int parallelism() {
                return 2;
            }

            @Override
            public void run(int parts, IntConsumer part) {
                throw broken;
            }
        };
        try (FlixIndex index = openIndex()) {
            final MicroBatchEngine engine = new MicroBatchEngine(index, MicroBatchEngine.Sorting.INDEX_SORT, failing,
                    1);
            final OperationBatch batch = new OperationBatch();
            batch.get(1);
            batch.upsert(1, 2);
            assertSame(broken, assertThrows(IllegalStateException.class, () -> engine.execute(batch)));
            assertEquals(0, index.size(), "nothing written");
        }
    }
}
