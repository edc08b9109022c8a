package io.flix.index.gpu;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Set;

import com.sun.management.HotSpotDiagnosticMXBean;

/**
 * The process's Java heap registered with the CUDA driver (page-locked), so that host arrays cross the bus straight
 * from and into the heap ({@link HostArrayDma}) at the bus's rate instead of through pinned staging, whose host
 * copies hold a call to the host's memory bandwidth. Done once, by the first index that asks, for the life of the
 * process (about a second per 12 to 15 GiB of heap).
 *
 * <p>Only where the heap can never give pages back to the system: a page the heap gave back and took again would
 * not be the page registered, and a copy would miss it. That holds where the minimum heap is the maximum
 * ({@code -Xms} = {@code -Xmx}, as Flink starts its task managers) and the collector keeps its heap in one mapping
 * and never copies an array held for native code (G1, Parallel, Serial). Elsewhere the staging stays.
 */
final class HeapRegistration {

    /** Collectors (by their beans' names) whose heap is one mapping and whose critical access pins arrays. */
    static final Set<String> SAFE_COLLECTORS = Set.of("G1 Young Generation", "G1 Old Generation",
            "G1 Concurrent GC", "PS Scavenge", "PS MarkSweep", "Copy", "MarkSweepCompact");

    private static boolean tried;
    private static String outcome = "not tried";
    private static long registeredBytes;
    private static boolean mappedForDevice;

    private HeapRegistration() {
    }

    /**
     * Registers the heap where that is safe and not done yet (with a device's context current); whether it is
     * registered. A refusal or a failure leaves the staging in use; {@link #outcome()} says why.
     */
    static synchronized boolean ensure() {
        if (tried) {
            return registeredBytes > 0;
        }
        tried = true;
        final String unsafe = unsafeReasonHere();
        if (unsafe != null) {
            outcome = "not registered: " + unsafe;
            return false;
        }
        final long[] range = new long[3];
        final long start = System.nanoTime();
        final int code = HostArrayDma.registerMappingOf(new long[1], range);
        if (code != 0) {
            outcome = "registration failed: CUDA driver error " + code + " ("
                    + DeviceMemoryNative.errorString(code) + ")";
            return false;
        }
        registeredBytes = range[1];
        mappedForDevice = range[2] != 0;
        outcome = String.format("registered %.1f GiB in %d ms%s; %s", range[1] / (double) (1L << 30),
                (System.nanoTime() - start) / 1_000_000, mappedForDevice ? ", mapped for the device" : "",
                pages(vmFlag("UseTransparentHugePages") || vmFlag("UseLargePages")));
        return true;
    }

    /**
     * What the heap's pages mean for its copies: from a heap in huge pages the device reads large batches faster
     * (docs/gpu-tuning.md), so a heap in small pages says how to ask for them.
     */
    static String pages(boolean hugePages) {
        return hugePages ? "the heap in huge pages"
                : "the heap in small pages: -XX:+UseTransparentHugePages moves large batches faster";
    }

    /**
     * Why registering a heap with these collectors and bounds would be unsafe, or null where it is safe.
     *
     * @param collectors   the names of the garbage collector beans
     * @param minHeapBytes the heap's minimum ({@code -XX:MinHeapSize}, set by {@code -Xms})
     * @param maxHeapBytes the heap's maximum ({@code -Xmx})
     */
    static String unsafeReason(List<String> collectors, long minHeapBytes, long maxHeapBytes) {
        if (collectors.isEmpty() || !SAFE_COLLECTORS.containsAll(collectors)) {
            return "the garbage collector " + collectors + " is not G1, Parallel or Serial";
        }
        if (minHeapBytes != maxHeapBytes) {
            return "the heap may shrink (minimum " + minHeapBytes + " bytes, maximum " + maxHeapBytes
                    + "): start the JVM with -Xms equal to -Xmx";
        }
        return null;
    }

    /** Why registering this JVM's heap would be unsafe, or null where it is safe. */
    static String unsafeReasonHere() {
        return unsafeReason(collectorNames(), heapOption("MinHeapSize"), heapOption("MaxHeapSize"));
    }

    /** What the registration came to: registered (how much, how long), not registered and why, or not tried. */
    static synchronized String outcome() {
        return outcome;
    }

    /** Bytes registered, 0 where none (so also whether the heap is registered). */
    static synchronized long registeredBytes() {
        return registeredBytes;
    }

    /** Whether the device reads and writes the heap in place (small lookups: {@link HostArrayDma#lookupMapped}). */
    static synchronized boolean mappedForDevice() {
        return mappedForDevice;
    }

    private static List<String> collectorNames() {
        return ManagementFactory.getGarbageCollectorMXBeans().stream().map(GarbageCollectorMXBean::getName).toList();
    }

    /** A boolean flag of this JVM; false where this JVM has no such flag. */
    private static boolean vmFlag(String name) {
        try {
            return Boolean.parseBoolean(ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                    .getVMOption(name).getValue());
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /** A heap size flag of this JVM, in bytes. */
    private static long heapOption(String name) {
        return Long.parseLong(ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                .getVMOption(name).getValue());
    }
}
