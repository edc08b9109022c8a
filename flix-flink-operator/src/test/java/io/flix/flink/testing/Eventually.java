package io.flix.flink.testing;

import java.util.concurrent.TimeUnit;

/**
 * Waits for something that must happen (a record applied, a subtask opened, batches queued). The limit is a safety
 * net against a hang, never what a test asserts: a test passes as soon as the thing happens, however busy the machine.
 */
public final class Eventually {

    /** The safety net; never reached when the code works. */
    public static final long SAFETY_NET_SECONDS = 300;

    /** What is waited for. */
    @FunctionalInterface
    public interface Check {
        boolean happened() throws Exception;
    }

    private Eventually() {
    }

    /** Returns once {@code check} holds; fails naming {@code what} after the safety net. */
    public static void await(String what, Check check) throws Exception {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(SAFETY_NET_SECONDS);
        while (!check.happened()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("waited " + SAFETY_NET_SECONDS + " s in vain for: " + what);
            }
            Thread.sleep(2);
        }
    }
}
