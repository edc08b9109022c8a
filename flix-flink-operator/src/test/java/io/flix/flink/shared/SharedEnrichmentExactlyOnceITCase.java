package io.flix.flink.shared;

import io.flix.flink.testing.CommittedOutput;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.Update;
import io.flix.index.Backend;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shared mode with injected failures: a job on two task managers (parallelism 4) whose updates and lookups
 * interleave, failed four times by a map that throws, alternately on the lookup path and on the update path, each
 * failure after a checkpoint completed since the last restart; fixed-delay restarts. Run with region failover (the
 * lookup path and the update path are pipelined regions of their own, restarted alone: the writers restore the
 * dimension in place while lookups go on) and with full failover (every task manager's dimension closed and restored).
 *
 * <h2>What is asserted, and why it holds for every interleaving</h2>
 * The dimension starts with a load (every data key upserted once); after it, each update upserts a data key to a
 * payload that names the key and the update's position, or deletes it; the last update writes a sentinel key.
 * Updates come from one subtask and are applied in order on each task manager, batch by batch, so a task manager's
 * dimension is always the result of a prefix of the update stream: after a failure on the update path it steps back
 * to the prefix of the checkpoint restored (the writers restore in place), which is past the load, since every
 * failure comes after a checkpoint triggered after the load was applied everywhere. Lookups start once the load is
 * applied on both task managers.
 * <ol>
 *   <li>Exactly once: the committed output (checkpointed, published at the end) holds every lookup once.</li>
 *   <li>Every answer is one some prefix at or after the load gives: a data key's payload is one of the payloads an
 *       upsert of that key wrote, or the key is absent only where an update after the load deletes it; a key never
 *       written is absent. A payload of another key, of no update, or a key lost from the load fails this.</li>
 *   <li>Lookups emitted once every failure has happened and both task managers have applied the sentinel (the last
 *       update) see the final dimension exactly: nothing steps back after the last failure.</li>
 * </ol>
 * Nothing waits on time: the sources are paced by events. While failures remain, each source reader lets a fixed
 * number of records through per failure, then waits for that failure (the failing path's readers let one more record
 * through once the failure is armed, for the map to throw on); the last update waits for the last failure; the
 * lookups after the last failure wait for the sentinel. So every failure finds records to fail on, and the job
 * cannot end before all have happened.
 */
class SharedEnrichmentExactlyOnceITCase {

    private static final String UID = "exactly-once-dimension";
    private static final int PARALLELISM = 4;
    private static final int KEYS = 200;
    /** The load, then updates that interleave with the lookups, then the sentinel. */
    private static final long UPDATES = KEYS + 800 + 1;
    private static final long LOOKUPS = PARALLELISM * 1200L;
    /** Records a source reader lets through per failure, while failures remain. */
    private static final int PER_FAILURE = 40;
    private static final long SENTINEL = -1;

    enum Path { LOOKUPS, UPDATES }

    private static final Path[] FAILURES = {Path.LOOKUPS, Path.UPDATES, Path.LOOKUPS, Path.UPDATES};

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(2).setNumberSlotsPerTaskManager(2)
                    .build());

    /** The events of one run, shared with its job (whose operators run in this JVM). */
    static final class Events {
        final CompletableFuture<Void> loaded = new CompletableFuture<>();
        final CompletableFuture<Void> allApplied = new CompletableFuture<>();
        final AtomicInteger failuresLeft = new AtomicInteger(FAILURES.length);
        /** Per failure: the checkpoint whose successor's completion arms it (the first snapshot taken after the
         * load and after the previous failure); armed; thrown. */
        final AtomicLong[] armAfter = new AtomicLong[FAILURES.length];
        final List<CompletableFuture<Void>> armed = new ArrayList<>();
        final List<CompletableFuture<Void>> failed = new ArrayList<>();
        /** The position after the last update generated (one update subtask). */
        final AtomicLong nextUpdate = new AtomicLong();

        Events() {
            for (int f = 0; f < FAILURES.length; f++) {
                armAfter[f] = new AtomicLong(Long.MAX_VALUE);
                armed.add(new CompletableFuture<>());
                failed.add(new CompletableFuture<>());
            }
        }
    }

    /** The running test's events; the runs of this class run one at a time. */
    static volatile Events events;

    /** A lookup: its id, the key, and whether it was emitted after every update was applied everywhere. */
    public static final class Probe {
        public long id;
        public long key;
        public boolean afterAllUpdates;

        public Probe() {
        }

        Probe(long id, long key, boolean afterAllUpdates) {
            this.id = id;
            this.key = key;
            this.afterAllUpdates = afterAllUpdates;
        }
    }

    static long dataKey(int k) {
        return k * 1_000L + 17;
    }

    /** Update {@code u}: the load, then upserts and deletes cycling through the keys, then the sentinel. */
    static Update update(long u) {
        if (u < KEYS) {
            return new Update(dataKey((int) u), dataKey((int) u) + "#" + u);
        }
        if (u == UPDATES - 1) {
            return new Update(SENTINEL, "end");
        }
        final long key = dataKey((int) (u * 7 % KEYS));
        return new Update(key, u % 5 == 0 ? null : key + "#" + u);
    }

    /** Lookup {@code i}: every tenth a key never written, the others data keys. */
    static Probe probe(long i) {
        final long key = i % 10 == 9 ? dataKey((int) (i % KEYS)) + 1 : dataKey((int) (i * 13 % KEYS));
        return new Probe(i, key, events.allApplied.isDone());
    }

    @ParameterizedTest(name = "failover {0}")
    @ValueSource(strings = {"region", "full"})
    void everyLookupOnceWithAnAnswerTheDimensionCouldGive(String failover) throws Exception {
        final String run = "shared-exactly-once-" + failover;
        final String uid = UID + "-" + failover;
        events = new Events();
        final Configuration conf = new Configuration();
        conf.set(JobManagerOptions.EXECUTION_FAILOVER_STRATEGY, failover);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 20);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.enableCheckpointing(100);
        // one at a time: a checkpoint is triggered only after the one before it ended (the arming relies on it)
        env.getCheckpointConfig().setMaxConcurrentCheckpoints(1);
        env.setParallelism(PARALLELISM);
        final DataStream<Update> updates = env.fromSource(new DataGeneratorSource<>(
                        (GeneratorFunction<Long, Update>) u -> {
                            events.nextUpdate.set(u + 1);
                            return update(u);
                        }, UPDATES, paced(Path.UPDATES), TypeInformation.of(Update.class)),
                        WatermarkStrategy.noWatermarks(), "updates")
                .uid("updates").setParallelism(1)
                .map(new FailingMap<Update>(Path.UPDATES)).returns(Update.class).uid("fail-updates")
                .setParallelism(1);
        final DataStream<Probe> lookups = env.fromSource(new DataGeneratorSource<>(
                        (GeneratorFunction<Long, Probe>) SharedEnrichmentExactlyOnceITCase::probe, LOOKUPS,
                        paced(Path.LOOKUPS), TypeInformation.of(Probe.class)),
                        WatermarkStrategy.noWatermarks(), "lookups")
                .uid("lookups")
                .map(new FailingMap<Probe>(Path.LOOKUPS)).returns(Probe.class).uid("fail-lookups");
        FlixEnrichment.shared(updates, lookups)
                .key(u -> u.key, p -> p.key)
                .payload(u -> u.payload, Types.STRING)
                .batchSize(16)
                .flushInterval(Duration.ofMillis(5))
                .backend(Backend.CPU)
                .threads(1)
                .uid(uid)
                .build()
                .map(e -> e.event.id + "," + e.event.key + "," + e.payload + "," + e.event.afterAllUpdates)
                .uid("format")
                .transform("committed", Types.VOID, new CommittedOutput<String>(run)).setParallelism(1)
                .uid("committed");
        final JobClient job = env.executeAsync(run);

        DimensionContents.await(uid, 2, dimension -> dimension.size() == KEYS,
                "the load applied on both task managers");
        events.loaded.complete(null);
        DimensionContents.await(uid, 2, dimension -> "end".equals(DimensionContents.payload(dimension, SENTINEL)),
                "every update applied on both task managers");
        events.allApplied.complete(null);
        job.getJobExecutionResult().get(DimensionContents.SAFETY_NET_SECONDS, TimeUnit.SECONDS);

        assertEquals(0, events.failuresLeft.get(), "every failure happened");
        final List<String> committed = CommittedOutput.PUBLISHED.get(run);
        assertEquals(LOOKUPS, committed.size(), "lookups committed");
        final Set<Long> ids = new HashSet<>();
        for (String line : committed) {
            ids.add(Long.parseLong(line.split(",")[0]));
        }
        assertEquals(LOOKUPS, ids.size(), "each lookup once");

        // what the updates leave possible for each key after the load, and the final dimension
        final Map<Long, Set<String>> possible = new HashMap<>();
        final Map<Long, String> last = new HashMap<>();
        for (long u = 0; u < UPDATES; u++) {
            final Update update = update(u);
            final Set<String> answers = possible.computeIfAbsent(update.key, k -> new HashSet<>());
            answers.add(String.valueOf(update.payload));
            if (update.payload == null) {
                last.remove(update.key);
            } else {
                last.put(update.key, update.payload);
            }
        }
        final List<String> wrong = new ArrayList<>();
        int afterAllUpdates = 0;
        for (String line : committed) {
            final String[] fields = line.split(",");
            final long key = Long.parseLong(fields[1]);
            final String payload = fields[2];
            final boolean isFinal = Boolean.parseBoolean(fields[3]);
            final Set<String> allowed = possible.getOrDefault(key, Set.of("null"));
            if (!allowed.contains(payload)) {
                wrong.add(line + " (possible: " + (allowed.size() > 8 ? allowed.size() + " payloads" : allowed) + ")");
            }
            if (isFinal) {
                afterAllUpdates++;
                if (!payload.equals(String.valueOf(last.get(key)))) {
                    wrong.add(line + " (after every update: " + last.get(key) + ")");
                }
            }
        }
        assertEquals(List.of(), wrong, "answers no prefix of the updates after the load gives");
        // by the pacing, each lookup reader emits at most PER_FAILURE + 1 records per failure before the last
        assertTrue(afterAllUpdates >= LOOKUPS - (long) PARALLELISM * FAILURES.length * (PER_FAILURE + 1),
                "lookups after every update: " + afterAllUpdates);
    }

    /** The source pacing of one path; see the class comment. */
    private static RateLimiterStrategy<NumberSequenceSource.NumberSequenceSplit> paced(Path path) {
        return parallelism -> new Pacer(path);
    }

    /**
     * Lets a reader's records through as the failures allow. Its fields change only in {@link #acquire}, which runs
     * on the reader's thread or, while the reader waits, in the callback of the event it waits for.
     */
    private static final class Pacer implements RateLimiter<NumberSequenceSource.NumberSequenceSplit> {
        private final Path path;
        private int failure = -1;
        private int letThrough;
        private boolean oneMoreLetThrough;

        Pacer(Path path) {
            this.path = path;
        }

        @Override
        public CompletionStage<Void> acquire(int permits) {
            if (!events.loaded.isDone()) {
                if (path == Path.UPDATES && events.nextUpdate.get() < KEYS) {
                    return CompletableFuture.completedFuture(null);
                }
                return events.loaded.thenCompose(v -> acquire(permits));
            }
            final int left = events.failuresLeft.get();
            if (left == 0) {
                return path == Path.UPDATES || events.allApplied.isDone() ? CompletableFuture.completedFuture(null)
                        : events.allApplied.thenCompose(v -> acquire(permits));
            }
            if (path == Path.UPDATES && events.nextUpdate.get() >= UPDATES - 1) {
                return events.failed.get(FAILURES.length - 1).thenCompose(v -> acquire(permits));
            }
            final int current = FAILURES.length - left;
            if (current != failure) {
                failure = current;
                letThrough = 0;
                oneMoreLetThrough = false;
            }
            if (letThrough < PER_FAILURE) {
                letThrough++;
                return CompletableFuture.completedFuture(null);
            }
            if (FAILURES[current] == path) {
                if (!events.armed.get(current).isDone()) {
                    return events.armed.get(current).thenCompose(v -> acquire(permits));
                }
                if (!oneMoreLetThrough) {
                    oneMoreLetThrough = true;
                    return CompletableFuture.completedFuture(null);
                }
            }
            return events.failed.get(current).thenCompose(v -> acquire(permits));
        }
    }

    /**
     * Passes records on; throws once for each failure planned on its path, at the first record after the failure
     * is armed: a checkpoint completed that was triggered after the load and after the previous failure.
     */
    static final class FailingMap<T> implements MapFunction<T, T>, CheckpointedFunction, CheckpointListener {
        private final Path path;

        FailingMap(Path path) {
            this.path = path;
        }

        @Override
        public T map(T value) {
            final int left = events.failuresLeft.get();
            if (left > 0) {
                final int current = FAILURES.length - left;
                if (FAILURES[current] == path && events.armed.get(current).isDone()
                        && events.failuresLeft.compareAndSet(left, left - 1)) {
                    events.failed.get(current).complete(null);
                    throw new IllegalStateException("injected failure " + (current + 1) + " on the " + path);
                }
            }
            return value;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext context) {
            final int left = events.failuresLeft.get();
            if (left > 0 && events.loaded.isDone()) {
                events.armAfter[FAILURES.length - left].compareAndSet(Long.MAX_VALUE, context.getCheckpointId());
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext context) {
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            final int left = events.failuresLeft.get();
            if (left > 0 && checkpointId > events.armAfter[FAILURES.length - left].get()) {
                events.armed.get(FAILURES.length - left).complete(null);
            }
        }
    }
}
