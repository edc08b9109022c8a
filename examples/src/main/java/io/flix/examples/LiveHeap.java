package io.flix.examples;

import java.lang.management.ManagementFactory;

/** The benchmarks' measure of memory held: the heap in use after full garbage collections. */
public final class LiveHeap {

    private LiveHeap() {
    }

    /**
     * Bytes of heap in use after three full collections, each followed by a short pause so that objects freed by
     * reference processing (finalizers, cleaners) are gone by the next one.
     */
    public static long bytes() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(200);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }
}
