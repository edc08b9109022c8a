package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuCtxGetCurrent;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRelease;
import static jcuda.driver.JCudaDriver.cuDevicePrimaryCtxRetain;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.TreeMapOracle;

import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Indexes opened on one device from different threads (as the subtasks of one task manager open theirs) share the
 * device's primary context, retained once per process, and work at the same time with correct results: the
 * threads meet at a barrier after every round, so each round of one thread runs while the other's index is open
 * and in use, whatever the timing; a context that made one index wait for the other to close would never pass the
 * barrier. Skips where no GPU is usable.
 */
class GpuSharedContextTest {

    private static final int THREADS = 2;
    private static final int ROUNDS = 40;
    private static final int BATCH = 1 << 14;

    /** A safety net for a thread that should have reached the barrier long before; never what the test asserts. */
    private static final long STUCK_MINUTES = 5;

    /** What one thread saw: its index's device context, the context current on it, the operations it checked. */
    private record Seen(GpuRuntime.DeviceContext deviceContext, CUcontext current, long operationsChecked) {
    }

    @Test
    void indexesOnOneDeviceShareOneContextAndWorkConcurrently() throws Exception {
        Assumptions.assumeTrue(GpuSupport.isAvailable(), GpuSupport.unavailableReason());
        final CyclicBarrier rounds = new CyclicBarrier(THREADS);
        final ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        final Seen[] seen = new Seen[THREADS];
        try {
            final Future<?>[] done = new Future<?>[THREADS];
            for (int t = 0; t < THREADS; t++) {
                final int thread = t;
                done[t] = pool.submit(() -> {
                    try {
                        seen[thread] = exercise(thread, rounds);
                    } catch (Throwable e) {
                        rounds.reset(); // the other thread stops waiting for this one
                        throw e;
                    }
                    return null;
                });
            }
            for (Future<?> f : done) {
                f.get(STUCK_MINUTES, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }

        assertSame(seen[0].deviceContext(), seen[1].deviceContext(), "one context object per device");
        final CUcontext primary = new CUcontext();
        final CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        cuDevicePrimaryCtxRetain(primary, device);
        try {
            for (Seen s : seen) {
                assertEquals(primary, s.current(), "the device's primary context is current on each thread");
            }
        } finally {
            cuDevicePrimaryCtxRelease(device);
        }
        for (Seen s : seen) {
            assertEquals((long) ROUNDS * BATCH * 2, s.operationsChecked());
        }
    }

    /**
     * Random upserts, deletes and gets on an index of this thread's own, each checked against an oracle; the
     * threads wait for each other before every round, with their indexes open.
     */
    private static Seen exercise(int thread, CyclicBarrier rounds) throws Exception {
        final SplittableRandom random = new SplittableRandom(0x5EED + thread);
        final long[] keys = new long[BATCH];
        final long[] values = new long[BATCH];
        final long[] got = new long[BATCH];
        final long[] expected = new long[BATCH];
        long checked = 0;
        try (GpuFlixIndex index = GpuFlixIndex.open(FlixConfig.builder().backend(Backend.GPU).device(0).build());
             TreeMapOracle oracle = new TreeMapOracle()) {
            for (int round = 0; round < ROUNDS; round++) {
                rounds.await(STUCK_MINUTES, TimeUnit.MINUTES);
                // keys from a range small enough that later rounds replace and delete earlier ones
                for (int i = 0; i < BATCH; i++) {
                    keys[i] = random.nextLong(1 << 18) * 0x9E3779B97F4A7C15L;
                    values[i] = random.nextLong(Long.MIN_VALUE + 1, Long.MAX_VALUE);
                }
                if (round % 4 == 3) {
                    index.delete(keys, BATCH / 2, false);
                    oracle.delete(keys, BATCH / 2, false);
                } else {
                    index.upsert(keys, values, BATCH, false);
                    oracle.upsert(keys, values, BATCH, false);
                }
                checked += BATCH;
                for (int i = 0; i < BATCH; i++) {
                    keys[i] = random.nextLong(1 << 18) * 0x9E3779B97F4A7C15L;
                }
                index.get(keys, BATCH, got, false);
                oracle.get(keys, BATCH, expected, false);
                assertArrayEquals(expected, got, "thread " + thread + ", round " + round);
                checked += BATCH;
                assertEquals(oracle.size(), index.size(), "thread " + thread + ", round " + round);
            }
            final CUcontext current = new CUcontext();
            cuCtxGetCurrent(current);
            return new Seen(index.deviceContext(), current, checked);
        }
    }
}
