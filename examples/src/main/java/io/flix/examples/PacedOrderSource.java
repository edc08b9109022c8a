package io.flix.examples;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@link LatencyBenchmark}'s orders: a bounded source that offers orders at fixed rates, phase after phase
 * ({@link Schedule}), each order stamped with the time it was due.
 *
 * <p>Pacing: every subtask ("lane" {@code l} of {@code L}) offers {@code 1/L} of each phase's rate. The clock starts
 * at the run's epoch ({@link LatencyRecorder.Run#epoch}, set once the dimension is loaded); order {@code k} of a lane
 * in phase {@code j} is due at {@code epoch + start(j) + (k + l/L) / laneRate(j)}: computed from the epoch, not from
 * the last emission, so that nothing drifts, and the lanes interleave. A poll emits every order already due (up to
 * {@value #MAX_PER_POLL} at a time, so that the task's mailbox runs between); where none is due, the reader is
 * unavailable until the next one is (a timer, no sleeping in the task thread, no spinning). A lane that falls behind
 * (a job that cannot take the rate: back pressure) emits its late orders as fast as it can, stamped with their due
 * time, so the latency measured includes the time an order waited to be emitted (no coordinated omission).
 *
 * <p>The order carries its stamp and phase in the fields of the {@link Order} the throughput benchmark uses (so that
 * every contestant's job is the same code and serializes the same bytes): {@code orderId} is the due time
 * ({@link System#nanoTime()} of this JVM: the job runs in a local cluster), {@code quantity} the phase (0: the
 * warm-up). The products are those of {@link EnrichmentBenchmark}'s orders: half of them in the dimension.
 */
final class PacedOrderSource
        implements Source<Order, NumberSequenceSplit, Collection<NumberSequenceSplit>>, ResultTypeQueryable<Order> {

    /** Orders emitted in one poll at most: the task's mailbox (checkpoints, timers) runs between polls. */
    static final int MAX_PER_POLL = 256;

    /**
     * The phases: {@code rates[j]} orders per second across the job for {@code seconds[j]} seconds; phase 0 is the
     * warm-up.
     */
    record Schedule(double[] rates, double[] seconds) implements Serializable {
        Schedule {
            rates = rates.clone();
            seconds = seconds.clone();
            if (rates.length != seconds.length || rates.length < 2) {
                throw new IllegalArgumentException("a schedule has a warm-up and 1 or more phases, each with its rate "
                        + "and length: " + Arrays.toString(rates) + ", " + Arrays.toString(seconds));
            }
            for (int j = 0; j < rates.length; j++) {
                if (!(rates[j] > 0) || !(seconds[j] > 0)) {
                    throw new IllegalArgumentException("rates and lengths must be > 0: " + Arrays.toString(rates)
                            + ", " + Arrays.toString(seconds));
                }
            }
        }

        int phases() {
            return rates.length;
        }

        /** Nanoseconds from the epoch to the start of phase {@code j} ({@code phases()}: the end of the last). */
        long startNanos(int j) {
            double s = 0;
            for (int i = 0; i < j; i++) {
                s += seconds[i];
            }
            return Math.round(s * 1e9);
        }

        /** The orders lane {@code lane} of {@code lanes} offers in phase {@code j}: those due before it ends. */
        long laneOrders(int j, int lane, int lanes) {
            final double laneRate = rates[j] / lanes;
            // order k is due at (k + lane/lanes) / laneRate seconds into the phase, k = 0, 1, ...
            final double last = laneRate * seconds[j] - (double) lane / lanes;
            return last <= 0 ? 0 : (long) Math.ceil(last);
        }

        /** The orders all lanes offer in phase {@code j}. */
        long orders(int j, int lanes) {
            long n = 0;
            for (int lane = 0; lane < lanes; lane++) {
                n += laneOrders(j, lane, lanes);
            }
            return n;
        }
    }

    private final String runId;
    private final long keys;
    private final Schedule schedule;
    /** Only for its split enumerator and serializers: the readers take no splits, each is a lane of its own. */
    private final NumberSequenceSource noSplits = new NumberSequenceSource(0, 0);

    /** Orders of products out of {@code 2 * keys} (half in the dimension), paced by {@code schedule}. */
    PacedOrderSource(String runId, long keys, Schedule schedule) {
        this.runId = runId;
        this.keys = keys;
        this.schedule = schedule;
    }

    @Override
    public TypeInformation<Order> getProducedType() {
        return TypeInformation.of(Order.class);
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.BOUNDED;
    }

    @Override
    public SourceReader<Order, NumberSequenceSplit> createReader(SourceReaderContext context) {
        return new PacedReader(LatencyRecorder.run(runId), keys, schedule, context.getIndexOfSubtask(),
                context.currentParallelism());
    }

    @Override
    public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>> createEnumerator(
            SplitEnumeratorContext<NumberSequenceSplit> context) {
        return noSplits.createEnumerator(context);
    }

    @Override
    public SplitEnumerator<NumberSequenceSplit, Collection<NumberSequenceSplit>> restoreEnumerator(
            SplitEnumeratorContext<NumberSequenceSplit> context, Collection<NumberSequenceSplit> checkpoint) {
        return noSplits.restoreEnumerator(context, checkpoint);
    }

    @Override
    public SimpleVersionedSerializer<NumberSequenceSplit> getSplitSerializer() {
        return noSplits.getSplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<Collection<NumberSequenceSplit>> getEnumeratorCheckpointSerializer() {
        return noSplits.getEnumeratorCheckpointSerializer();
    }

    /** One lane: its orders of each phase at their due times, the counts emitted reported to the run at the end. */
    static final class PacedReader implements SourceReader<Order, NumberSequenceSplit> {
        private final LatencyRecorder.Run run;
        private final long space;
        private final Schedule schedule;
        private final int lane;
        private final int lanes;
        private final long[] emitted;
        private long epoch = -1;
        private int phase;
        /** The next order's number within its phase, and within the lane. */
        private long k;
        private long ordinal;
        private long phaseStart;
        private double nanosPerOrder;
        private long phaseOrders;
        private CompletableFuture<Void> available = CompletableFuture.completedFuture(null);
        private boolean reported;

        PacedReader(LatencyRecorder.Run run, long keys, Schedule schedule, int lane, int lanes) {
            this.run = run;
            this.space = 2 * keys;
            this.schedule = schedule;
            this.lane = lane;
            this.lanes = lanes;
            this.emitted = new long[schedule.phases()];
        }

        @Override
        public void start() {
        }

        @Override
        public InputStatus pollNext(ReaderOutput<Order> output) {
            if (epoch < 0) {
                final CompletableFuture<Long> released = run.epoch();
                if (!released.isDone()) {
                    available = released.thenApply(e -> null);
                    return InputStatus.NOTHING_AVAILABLE;
                }
                epoch = released.join();
                enterPhase(0);
            }
            final long now = System.nanoTime();
            for (int n = 0; n < MAX_PER_POLL; n++) {
                while (k >= phaseOrders) {
                    if (phase + 1 >= schedule.phases()) {
                        report();
                        return InputStatus.END_OF_INPUT;
                    }
                    enterPhase(phase + 1);
                }
                final long due = phaseStart + (long) ((k + (double) lane / lanes) * nanosPerOrder);
                if (due > now) {
                    final CompletableFuture<Void> wake = new CompletableFuture<>();
                    // completed on the JDK's delay thread itself (no hop through the common pool)
                    CompletableFuture.delayedExecutor(due - now, TimeUnit.NANOSECONDS, Runnable::run)
                            .execute(() -> wake.complete(null));
                    available = wake;
                    return InputStatus.NOTHING_AVAILABLE;
                }
                final long i = lane + (long) lanes * ordinal; // the throughput benchmark's order i
                output.collect(new Order(due,
                        EnrichmentBenchmark.productId(Math.floorMod(i * 0x2545F4914F6CDD1DL, space)), phase));
                emitted[phase]++;
                k++;
                ordinal++;
            }
            return InputStatus.MORE_AVAILABLE;
        }

        private void enterPhase(int j) {
            phase = j;
            k = 0;
            phaseStart = epoch + schedule.startNanos(j);
            nanosPerOrder = 1e9 * lanes / schedule.rates()[j];
            phaseOrders = schedule.laneOrders(j, lane, lanes);
        }

        private void report() {
            if (!reported) {
                reported = true;
                run.emitted(emitted);
            }
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return available;
        }

        @Override
        public void addSplits(List<NumberSequenceSplit> splits) {
            // none are asked for
        }

        @Override
        public void notifyNoMoreSplits() {
        }

        @Override
        public List<NumberSequenceSplit> snapshotState(long checkpointId) {
            return List.of();
        }

        @Override
        public void close() {
        }
    }
}
