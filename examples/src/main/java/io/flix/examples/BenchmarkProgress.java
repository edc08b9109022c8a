package io.flix.examples;

import java.lang.management.ManagementFactory;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;


/**
 * What the running benchmark job reports back to {@link EnrichmentBenchmark}: the job runs in this JVM (a local
 * cluster), so its functions count here, and the benchmark reads the counts, resets them before each job and holds
 * the orders back until the dimension is loaded. LongAdders, not one contended counter, so that counting does not
 * slow the subtasks down at high parallelism.
 */
final class BenchmarkProgress {

    private static final LongAdder UPDATES_APPLIED = new LongAdder();
    private static volatile boolean flixUpdateSeen;
    /** Subtasks of the non-FliX contestants' functions opened (with their state restored, where restored). */
    private static final LongAdder OPENED = new LongAdder();
    private static final AtomicLong LOAD_START = new AtomicLong();
    private static final AtomicLong LOOKUP_START = new AtomicLong();
    // process CPU time (all threads, JIT and GC included) at the same moments
    private static final AtomicLong LOAD_START_CPU = new AtomicLong();
    private static final AtomicLong LOOKUP_START_CPU = new AtomicLong();
    private static final LongAdder ENRICHED = new LongAdder();
    private static final LongAdder HITS = new LongAdder();
    private static final LongAdder WRONG = new LongAdder();
    private static final AtomicReference<String> FIRST_WRONG = new AtomicReference<>();
    private static volatile CompletableFuture<Void> lookupsReleased = new CompletableFuture<>();

    private BenchmarkProgress() {
    }

    /** Before each job: every count back to zero, the orders held back again, FliX's gauges cleared. */
    static void resetProgress() {
        UPDATES_APPLIED.reset();
        flixUpdateSeen = false;
        OPENED.reset();
        LOAD_START.set(0);
        LOOKUP_START.set(0);
        LOAD_START_CPU.set(0);
        LOOKUP_START_CPU.set(0);
        ENRICHED.reset();
        HITS.reset();
        WRONG.reset();
        FIRST_WRONG.set(null);
        lookupsReleased = new CompletableFuture<>();
        FlixMetrics.clear();
    }

    /** An update applied to a copy of the dimension; the first one starts the load's clocks. */
    static void updateApplied() {
        if (LOAD_START.get() == 0 && LOAD_START.compareAndSet(0, System.nanoTime())) {
            LOAD_START_CPU.set(processCpuNanos());
        }
        UPDATES_APPLIED.increment();
    }

    /**
     * A FliX contestant's payload function ran for an update: the first one starts the load's clocks and is counted.
     * The others are not: FliX's gauges tell when its dimension is loaded, and a count by every update would cost
     * the shared mode, whose payload function runs in all the update sources at once, more than the keyed mode.
     */
    static void flixUpdateSeen() {
        if (!flixUpdateSeen) {
            flixUpdateSeen = true;
            updateApplied();
        }
    }

    /** A subtask of a non-FliX contestant's function opened (its state restored, where restored). */
    static void functionOpened() {
        OPENED.increment();
    }

    /** {@code enriched} more orders reached a sink, {@code hits} of them with a payload. */
    static void answered(long enriched, long hits) {
        ENRICHED.add(enriched);
        HITS.add(hits);
    }

    /** A sink found a wrong answer, named by {@code wrong}. */
    static void answeredWrong(String wrong) {
        WRONG.increment();
        FIRST_WRONG.compareAndSet(null, wrong);
    }

    static long updatesApplied() {
        return UPDATES_APPLIED.sum();
    }

    static long functionsOpened() {
        return OPENED.sum();
    }

    static long hits() {
        return HITS.sum();
    }

    static long loadStartNanos() {
        return LOAD_START.get();
    }

    static long lookupStartNanos() {
        return LOOKUP_START.get();
    }

    static long loadStartCpuNanos() {
        return LOAD_START_CPU.get();
    }

    static long lookupStartCpuNanos() {
        return LOOKUP_START_CPU.get();
    }

    /** Every lookup came out, every answer right, and none at all from a contestant without state. */
    static void checkAnswers(String label, long lookups, boolean keepsNoState) {
        if (ENRICHED.sum() != lookups) {
            throw new IllegalStateException(label + ": " + ENRICHED.sum() + " of " + lookups + " lookups came out");
        }
        if (WRONG.sum() > 0) {
            throw new IllegalStateException(label + ": " + WRONG.sum() + " wrong answers, the first: "
                    + FIRST_WRONG.get());
        }
        if (keepsNoState && HITS.sum() != 0) {
            throw new IllegalStateException(label + " keeps no state but answered " + HITS.sum()
                    + " lookups with a payload");
        }
    }

    /** Lets the held-back orders go; their clocks start now. */
    static void releaseLookups() {
        LOOKUP_START_CPU.set(processCpuNanos());
        LOOKUP_START.set(System.nanoTime());
        lookupsReleased.complete(null);
    }

    /** The orders' gate ({@link GeneratedSource#heldBackUntil}): done once {@link #releaseLookups()} is called. */
    static CompletableFuture<Void> lookupsReleased() {
        return lookupsReleased;
    }

    static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }
}
