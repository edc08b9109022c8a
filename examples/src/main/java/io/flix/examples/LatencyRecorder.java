package io.flix.examples;

import io.flix.flink.Enriched;

import org.HdrHistogram.Histogram;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where {@link LatencyBenchmark}'s job reports to: a run per job, found by its id (the job runs in a local cluster
 * in this JVM, its classes from this class loader, so a static registry is shared by the benchmark, the source
 * readers and the sink writers). The run holds the clock's epoch the readers wait for, the orders each reader
 * emitted per phase, and the latencies the sink writers recorded per phase, each writer's histograms merged into
 * the run's when it closes.
 */
final class LatencyRecorder {

    /** Latencies from 1 microsecond (the resolution) on; a histogram grows to the largest recorded. */
    private static final long RESOLUTION_NANOS = 1_000;
    private static final int SIGNIFICANT_DIGITS = 3;

    private static final Map<String, Run> RUNS = new ConcurrentHashMap<>();

    private LatencyRecorder() {
    }

    /** A new run of {@code schedule}'s phases under {@code id}. */
    static Run start(String id, PacedOrderSource.Schedule schedule) {
        final Run run = new Run(schedule);
        if (RUNS.putIfAbsent(id, run) != null) {
            throw new IllegalStateException("a latency run '" + id + "' is already registered");
        }
        return run;
    }

    static Run run(String id) {
        final Run run = RUNS.get(id);
        if (run == null) {
            throw new IllegalStateException("no latency run '" + id + "' is registered");
        }
        return run;
    }

    /** Forgets the run (its results stay with whoever holds it). */
    static void end(String id) {
        RUNS.remove(id);
    }

    static Histogram histogram() {
        final Histogram histogram = new Histogram(RESOLUTION_NANOS, 1_000 * RESOLUTION_NANOS, SIGNIFICANT_DIGITS);
        histogram.setAutoResize(true);
        return histogram;
    }

    /** One job's clock, counts and latencies, per phase of its schedule. */
    static final class Run {
        private final PacedOrderSource.Schedule schedule;
        private final CompletableFuture<Long> epoch = new CompletableFuture<>();
        private final Histogram[] latencies;
        private final long[] emitted;
        private final long[] outputsInWindow;
        private int writersClosed;

        private Run(PacedOrderSource.Schedule schedule) {
            this.schedule = schedule;
            final int phases = schedule.phases();
            latencies = new Histogram[phases];
            for (int j = 0; j < phases; j++) {
                latencies[j] = histogram();
            }
            emitted = new long[phases];
            outputsInWindow = new long[phases + 1];
        }

        PacedOrderSource.Schedule schedule() {
            return schedule;
        }

        /** The clock's start ({@link System#nanoTime()}): the readers emit nothing before it is set. */
        CompletableFuture<Long> epoch() {
            return epoch;
        }

        /** Starts the clock at {@code nanoTime}. */
        void release(long nanoTime) {
            epoch.complete(nanoTime);
        }

        /** A reader's orders emitted per phase. */
        synchronized void emitted(long[] perPhase) {
            for (int j = 0; j < perPhase.length; j++) {
                emitted[j] += perPhase[j];
            }
        }

        /** A writer's latencies per phase (by the phase each order was stamped in) and outputs per phase window. */
        synchronized void recorded(Histogram[] perPhase, long[] outputs) {
            for (int j = 0; j < perPhase.length; j++) {
                latencies[j].add(perPhase[j]);
            }
            for (int j = 0; j < outputs.length; j++) {
                outputsInWindow[j] += outputs[j];
            }
            writersClosed++;
        }

        /** The merged latencies (nanoseconds) of the orders stamped in phase {@code j}. */
        synchronized Histogram latencies(int j) {
            return latencies[j].copy();
        }

        synchronized long emitted(int j) {
            return emitted[j];
        }

        /**
         * Orders that came out of the enrichment while phase {@code j}'s window ran (whatever their stamp);
         * {@code j = phases}: after the last window (a backlog drained).
         */
        synchronized long outputsInWindow(int j) {
            return outputsInWindow[j];
        }

        synchronized int writersClosed() {
            return writersClosed;
        }
    }

    /**
     * The job's sink, chained to the enrichment: the latency of each order, its output time ({@link System#nanoTime()}
     * when the enrichment hands it on) minus its stamp, into the histogram of the phase it was stamped in; and the
     * outputs counted per phase window by output time (the achieved rate). Merged into the run at close.
     */
    static final class LatencySink<P> implements Sink<Enriched<Order, P>> {
        private final String runId;

        LatencySink(String runId) {
            this.runId = runId;
        }

        @Override
        public SinkWriter<Enriched<Order, P>> createWriter(WriterInitContext context) {
            final Run run = run(runId);
            final PacedOrderSource.Schedule schedule = run.schedule();
            final int phases = schedule.phases();
            final Histogram[] latencies = new Histogram[phases];
            for (int j = 0; j < phases; j++) {
                latencies[j] = histogram();
            }
            final long[] windowEnds = new long[phases];
            return new SinkWriter<>() {
                private final long[] outputs = new long[phases + 1];
                private int window = -1;
                private boolean merged;

                @Override
                public void write(Enriched<Order, P> enriched, Context context) {
                    final long now = System.nanoTime();
                    final Order order = enriched.event;
                    latencies[order.quantity].recordValue(Math.max(0, now - order.orderId));
                    if (window < 0) {
                        final long epoch = run.epoch().join(); // set: the order was emitted after it
                        for (int j = 0; j < phases; j++) {
                            windowEnds[j] = epoch + schedule.startNanos(j + 1);
                        }
                        window = 0;
                    }
                    while (window < phases && now >= windowEnds[window]) {
                        window++; // phases: after the last window
                    }
                    outputs[window]++;
                }

                @Override
                public void flush(boolean endOfInput) {
                }

                @Override
                public void close() {
                    if (!merged) {
                        merged = true;
                        run.recorded(latencies, outputs);
                    }
                }
            };
        }
    }
}
