package io.flix.flink;

import io.flix.flink.testing.CommittedOutput;
import io.flix.index.Backend;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A job with checkpoints, killed twice in the middle of its lookups, recovers from its checkpoints to the very
 * output of the run without failures: every lookup once, each with the same payload.
 *
 * <p>The lookups wait (without blocking checkpoints) until every update is in the operator and a checkpoint taken
 * after that has completed: the failure-free output is one fixed answer, every restore starts from a checkpoint
 * holding the whole dimension, and the failures come at fixed lookups, whatever the timing of checkpoints and
 * lookups.
 */
class FlixEnrichmentExactlyOnceITCase {

    private static final int KEYS = 3000;
    private static final long UPDATES = 12_000;
    private static final long LOOKUPS = 30_000;
    private static final int PLANNED_FAILURES = 2;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
                    .build());

    @Test
    void outputWithInjectedFailuresEqualsTheFailureFreeRun() throws Exception {
        final List<String> clean = run("exactly-once-clean", 0);
        final List<String> failing = run("exactly-once-failing", PLANNED_FAILURES);
        assertEquals(0, FailingMap.FAILURES_LEFT.get("exactly-once-failing").get(), "both failures happened");
        assertEquals(LOOKUPS, clean.size());
        assertEquals(LOOKUPS, new HashSet<>(clean).size(), "each lookup once");
        assertEquals(clean, failing);
        // and the clean run is right: each lookup got the dimension's payload
        final Map<Long, String> dimension = TestJobs.dimension(UPDATES, KEYS);
        for (long i = 0; i < LOOKUPS; i++) {
            final Lookup l = new Lookup(i, TestJobs.key(i, KEYS), TestJobs.key(i, KEYS));
            final String expected = new Enriched<>(l, LookupKind.EXACT, dimension.get(l.key), null, null).toString();
            if (!clean.contains(expected)) {
                throw new AssertionError("missing " + expected);
            }
        }
    }

    private static List<String> run(String run, int failures) throws Exception {
        JobParts.reset(run);
        FailingMap.FAILURES_LEFT.put(run, new AtomicInteger(failures));
        FailingMap.GATE_CHECKPOINT.put(run, new AtomicLong(Long.MAX_VALUE));
        final Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 10);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(50));
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.enableCheckpointing(100);
        env.setParallelism(2);
        final DataStream<Update> updates = TestJobs.updates(env, UPDATES, KEYS, "updates");
        final DataStream<Lookup> lookups = TestJobs.lookups(env, LOOKUPS, KEYS, run,
                        JobParts.Gate.CHECKPOINTED_AFTER_LOAD, 15_000, "lookups")
                .map(new FailingMap(run)).setParallelism(1);
        FlixEnrichment.of(updates, lookups)
                .key(u -> u.key, l -> l.key)
                .payload(JobParts.countingPayload(run, UPDATES), Types.STRING)
                .batchSize(500)
                .flushInterval(Duration.ofMillis(20))
                .backend(Backend.CPU)
                .threads(1)
                .build()
                .transform("collect", Types.VOID, new CommittedOutput<>(run)).setParallelism(1);
        env.execute(run);
        final List<String> out = new ArrayList<>(JobParts.COLLECTED.get(run));
        Collections.sort(out);
        return out;
    }

    /**
     * Throws once per planned failure, each at a fixed lookup; opens the lookups' gate once a checkpoint taken
     * after the load has completed.
     */
    static final class FailingMap implements MapFunction<Lookup, Lookup>, CheckpointedFunction, CheckpointListener {
        static final Map<String, AtomicInteger> FAILURES_LEFT = new ConcurrentHashMap<>();
        /** The first checkpoint taken with the load complete. */
        static final Map<String, AtomicLong> GATE_CHECKPOINT = new ConcurrentHashMap<>();

        private final String run;

        FailingMap(String run) {
            this.run = run;
        }

        @Override
        public Lookup map(Lookup lookup) {
            // failure k of n comes at the first lookup past (k + 1) / (n + 1) of the lookups; a restore replays
            // the lookups from before it, which pass
            final int left = FAILURES_LEFT.get(run).get();
            final int done = PLANNED_FAILURES - left;
            if (left > 0 && lookup.id >= LOOKUPS * (done + 1) / (PLANNED_FAILURES + 1)) {
                FAILURES_LEFT.get(run).decrementAndGet();
                throw new IllegalStateException("injected failure");
            }
            return lookup;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {
            if (JobParts.LOADED.get(run).isDone()) {
                GATE_CHECKPOINT.get(run).compareAndSet(Long.MAX_VALUE, context.getCheckpointId());
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            if (checkpointId >= GATE_CHECKPOINT.get(run).get()) {
                JobParts.CHECKPOINTED_AFTER_LOAD.get(run).complete(null);
            }
        }
    }
}
