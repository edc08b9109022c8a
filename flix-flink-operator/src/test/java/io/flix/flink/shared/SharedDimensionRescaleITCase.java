package io.flix.flink.shared;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.testing.Eventually;
import io.flix.flink.testing.Savepoints;
import io.flix.flink.Update;
import io.flix.index.Backend;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.DefaultOperatorStateBackend;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.legacy.SinkFunction;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One shared-mode job run on 2 task managers, stopped with a savepoint and resumed on 3, then on 1 (a MiniCluster of
 * its own per phase, two slots per task manager, parallelism the slots in all), the dimension changed in every phase
 * by upserts of new keys, replacements and deletes. In every phase:
 * <ul>
 *   <li>each task manager's dimension is started once (built from the savepoint's copy) and holds, before the
 *       phase's updates, exactly what the previous phase left: no key lost, none resurrected, payloads right;</li>
 *   <li>after the phase's updates, exact lookups of every key ever written (and of keys never written) answer as a
 *       TreeMap applying the same updates says;</li>
 *   <li>the savepoint holds the dimension once: the writer's raw operator state is one partition in all, marked for
 *       union redistribution.</li>
 * </ul>
 * The phase's steps are gated by the test (sources held back, not timed): updates wait until every task manager
 * has started its dimension and the test has read it; lookups wait until every task manager has applied the phase's
 * last update, a sentinel key's new payload. Both sources then stay open, so that no operator is finished in the
 * savepoint.
 */
class SharedDimensionRescaleITCase {

    private static final String UID = "rescaled-dimension";
    private static final int SLOTS_PER_TASK_MANAGER = 2;
    private static final int[] TASK_MANAGERS = {2, 3, 1};
    private static final int UPDATES_PER_PHASE = 4000;
    private static final long SENTINEL = 42;

    /** Per phase: the test opens these gates; the job reports through these. */
    static final Map<Integer, CompletableFuture<Void>> DIMENSIONS_READ = new ConcurrentHashMap<>();
    static final Map<Integer, CompletableFuture<Void>> UPDATES_APPLIED = new ConcurrentHashMap<>();
    static final Map<Integer, AtomicLong> UPDATES_EMITTED = new ConcurrentHashMap<>();
    static final Map<Integer, AtomicLong> LOOKUPS_EMITTED = new ConcurrentHashMap<>();
    static final Map<Integer, ConcurrentLinkedQueue<String>> ANSWERS = new ConcurrentHashMap<>();

    @Test
    void rescale2To3To1TaskManagersKeepsTheDimension(@TempDir Path savepoints) throws Exception {
        final SplittableRandom random = new SplittableRandom(2026_11_23);
        final TreeMap<Long, String> oracle = new TreeMap<>();
        final List<Long> everSeen = new ArrayList<>();
        String savepoint = null;
        for (int phase = 0; phase < TASK_MANAGERS.length; phase++) {
            final int taskManagers = TASK_MANAGERS[phase];
            final int parallelism = taskManagers * SLOTS_PER_TASK_MANAGER;
            final TreeMap<Long, String> before = new TreeMap<>(oracle);
            final List<Long> seenBefore = List.copyOf(everSeen);
            final List<Update> updates = updates(phase, random, oracle, everSeen);
            final long[] probes = probes(random, everSeen);
            DIMENSIONS_READ.put(phase, new CompletableFuture<>());
            UPDATES_APPLIED.put(phase, new CompletableFuture<>());
            UPDATES_EMITTED.put(phase, new AtomicLong());
            LOOKUPS_EMITTED.put(phase, new AtomicLong());
            ANSWERS.put(phase, new ConcurrentLinkedQueue<>());

            final Configuration cluster = new Configuration();
            cluster.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.ofMebiBytes(16));
            final MiniCluster miniCluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                    .setConfiguration(cluster).setNumTaskManagers(taskManagers)
                    .setNumSlotsPerTaskManager(SLOTS_PER_TASK_MANAGER).build());
            miniCluster.start();
            TestStreamEnvironment.setAsContext(miniCluster, parallelism);
            try {
                final Configuration conf = new Configuration();
                if (savepoint != null) {
                    conf.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
                    // the sources of the last phase are gone; the dimension's writer is restored
                    conf.set(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, true);
                }
                final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
                env.setParallelism(parallelism);
                job(env, phase, updates, probes);
                final JobClient client = env.executeAsync("rescale phase " + phase);

                final String where = "phase " + phase + " on " + taskManagers + " task managers";
                final List<TaskManagerDimension<?>> started = DimensionContents.await(UID, taskManagers,
                        dimension -> true, where + ": every task manager starts its dimension");
                for (TaskManagerDimension<?> dimension : started) {
                    assertHolds(before, seenBefore, dimension, where + ", as restored");
                }
                DIMENSIONS_READ.get(phase).complete(null);

                final String done = "phase " + phase;
                final List<TaskManagerDimension<?>> updated = DimensionContents.await(UID, taskManagers,
                        dimension -> done.equals(DimensionContents.payload(dimension, SENTINEL)),
                        where + ": every task manager applies the phase's updates");
                for (TaskManagerDimension<?> dimension : updated) {
                    assertEquals(1, dimension.builds(), where + ": each task manager built its index once");
                    assertHolds(oracle, everSeen, dimension, where + ", updated");
                }
                UPDATES_APPLIED.get(phase).complete(null);

                awaitAnswers(phase, probes.length);
                final List<String> expected = new ArrayList<>();
                for (long key : probes) {
                    expected.add(key + "=" + oracle.get(key));
                }
                final List<String> answers = new ArrayList<>(ANSWERS.get(phase));
                expected.sort(null);
                answers.sort(null);
                assertEquals(expected, answers, where + ": the lookups of every key");

                savepoint = Savepoints.stopWithSavepoint(miniCluster, client, savepoints.toUri().toString(),
                        DimensionContents.SAFETY_NET_SECONDS);
                client.getJobExecutionResult().get(DimensionContents.SAFETY_NET_SECONDS, TimeUnit.SECONDS);
                assertOneCopy(savepoint, parallelism, where);
            } finally {
                TestStreamEnvironment.unsetAsContext();
                miniCluster.close();
            }
            assertEquals(List.of(), TaskManagerDimensions.started(UID), "every dimension closed with its job");
        }
    }

    /**
     * A phase's updates, applied to the oracle as made: keys new to the dimension (the extremes among them in the
     * first phase), replacements, deletes of present and of absent keys, keys deleted and written again; then the
     * sentinel's payload naming the phase, the last update.
     */
    private static List<Update> updates(int phase, SplittableRandom random, TreeMap<Long, String> oracle,
                                        List<Long> everSeen) {
        final List<Update> updates = new ArrayList<>();
        if (phase == 0) {
            for (long edge : new long[] {Long.MIN_VALUE, Long.MAX_VALUE, 0, -1}) {
                updates.add(new Update(edge, "edge " + edge));
            }
        }
        while (updates.size() < UPDATES_PER_PHASE) {
            final int kind = random.nextInt(10);
            final long key;
            if (kind < 4 || everSeen.isEmpty()) {
                key = fresh(random, everSeen);
            } else {
                key = everSeen.get(random.nextInt(everSeen.size()));
            }
            final boolean delete = kind >= 7;
            updates.add(new Update(key, delete ? null : "phase " + phase + " update " + updates.size()));
        }
        updates.add(new Update(SENTINEL, "phase " + phase));
        for (Update update : updates) {
            if (!everSeen.contains(update.key)) {
                everSeen.add(update.key);
            }
            if (update.payload == null) {
                oracle.remove(update.key);
            } else {
                oracle.put(update.key, update.payload);
            }
        }
        return updates;
    }

    private static long fresh(SplittableRandom random, List<Long> everSeen) {
        long key;
        do {
            key = random.nextLong();
        } while (key == SENTINEL || everSeen.contains(key));
        return key;
    }

    /** Every key ever written, and keys never written. */
    private static long[] probes(SplittableRandom random, List<Long> everSeen) {
        final List<Long> probes = new ArrayList<>(everSeen);
        for (int i = 0; i < 50; i++) {
            probes.add(fresh(random, everSeen));
        }
        return probes.stream().mapToLong(Long::longValue).toArray();
    }

    private static void job(StreamExecutionEnvironment env, int phase, List<Update> updates, long[] probes) {
        final long[] keys = updates.stream().mapToLong(u -> u.key).toArray();
        final String[] payloads = updates.stream().map(u -> u.payload).toArray(String[]::new);
        final DataStream<Update> updateStream = env.fromSource(new DataGeneratorSource<>(
                        (GeneratorFunction<Long, Update>) i -> {
                            UPDATES_EMITTED.get(phase).set(i + 1);
                            return new Update(keys[(int) (long) i], payloads[(int) (long) i]);
                        }, Long.MAX_VALUE, heldBack(phase, false, keys.length), TypeInformation.of(Update.class)),
                        WatermarkStrategy.noWatermarks(), "updates " + phase)
                .uid("updates-" + phase).setParallelism(1);
        final DataStream<Long> lookups = env.fromSource(new DataGeneratorSource<>(
                        (GeneratorFunction<Long, Long>) i -> {
                            LOOKUPS_EMITTED.get(phase).set(i + 1);
                            return probes[(int) (long) i];
                        }, Long.MAX_VALUE, heldBack(phase, true, probes.length), Types.LONG),
                        WatermarkStrategy.noWatermarks(), "lookups " + phase)
                .uid("lookups-" + phase).setParallelism(1);
        FlixEnrichment.shared(updateStream, lookups)
                .key(u -> u.key, k -> k)
                .payload(u -> u.payload, Types.STRING)
                .batchSize(64)
                .flushInterval(Duration.ofMillis(5))
                .backend(Backend.CPU)
                .threads(1)
                .uid(UID)
                .build()
                .addSink(new SinkFunction<>() {
                    @Override
                    public void invoke(Enriched<Long, String> value, Context context) {
                        ANSWERS.get(phase).add(value.event + "=" + value.payload);
                    }
                }).uid("answers-" + phase);
    }

    /**
     * Holds a source (of parallelism 1) back until its gate opens (the updates': the dimensions were read; the
     * lookups': the updates were applied), then lets {@code count} records through, then holds it for good: the
     * source stays open until the job stops with a savepoint.
     */
    private static RateLimiterStrategy<NumberSequenceSource.NumberSequenceSplit> heldBack(int phase, boolean lookups,
                                                                                         int count) {
        return parallelism -> new RateLimiter<>() {
            @Override
            public CompletionStage<Void> acquire(int permits) {
                final CompletableFuture<Void> gate = (lookups ? UPDATES_APPLIED : DIMENSIONS_READ).get(phase);
                if (!gate.isDone()) {
                    return gate;
                }
                final long emitted = (lookups ? LOOKUPS_EMITTED : UPDATES_EMITTED).get(phase).get();
                return emitted < count ? CompletableFuture.completedFuture(null) : new CompletableFuture<>();
            }
        };
    }

    private static void awaitAnswers(int phase, int count) throws Exception {
        Eventually.await(count + " lookups answered in phase " + phase, () -> ANSWERS.get(phase).size() >= count);
    }

    private static void assertHolds(TreeMap<Long, String> oracle, List<Long> everSeen,
                                    TaskManagerDimension<?> dimension, String where) throws Exception {
        final long[] keys = everSeen.stream().mapToLong(Long::longValue).toArray();
        final Map<Long, Object> expected = new HashMap<>();
        for (long key : keys) {
            expected.put(key, oracle.get(key));
        }
        final Map<Long, Object> found = DimensionContents.payloads(dimension, keys);
        final Set<Long> wrong = new HashSet<>();
        for (long key : keys) {
            if (!java.util.Objects.equals(expected.get(key), found.get(key))) {
                wrong.add(key);
            }
        }
        assertEquals(Set.of(), wrong, where + ": keys whose payload (or absence) is wrong");
        assertEquals(oracle.size(), dimension.size(), where + ": no other key");
    }

    /** The savepoint holds the dimension once: one partition of the writer's raw operator state, for union. */
    private static void assertOneCopy(String savepoint, int parallelism, String where) throws Exception {
        final Path metadataFile = Paths.get(URI.create(savepoint)).resolve("_metadata");
        final CheckpointMetadata metadata;
        try (DataInputStream in = new DataInputStream(Files.newInputStream(metadataFile))) {
            metadata = Checkpoints.loadCheckpointMetadata(in, SharedDimensionRescaleITCase.class.getClassLoader(),
                    savepoint);
        }
        OperatorState writer = null;
        for (OperatorState state : metadata.getOperatorStates()) {
            if (state.getOperatorUid().filter((UID + "-dimension")::equals).isPresent()) {
                writer = state;
            }
        }
        assertTrue(writer != null, "the writer's state in " + metadata.getOperatorStates());
        assertEquals(parallelism, writer.getParallelism());
        final List<Integer> writing = new ArrayList<>();
        final List<OperatorStateHandle.Mode> partitions = new ArrayList<>();
        for (Map.Entry<Integer, OperatorSubtaskState> subtask : writer.getSubtaskStates().entrySet()) {
            for (OperatorStateHandle handle : subtask.getValue().getRawOperatorState()) {
                writing.add(subtask.getKey());
                final OperatorStateHandle.StateMetaInfo info = handle.getStateNameToPartitionOffsets()
                        .get(DefaultOperatorStateBackend.DEFAULT_OPERATOR_STATE_NAME);
                for (long ignored : info.getOffsets()) {
                    partitions.add(info.getDistributionMode());
                }
            }
        }
        assertEquals(1, writing.size(), where + ": one subtask writes the dimension, was " + writing);
        assertEquals(List.of(OperatorStateHandle.Mode.UNION), partitions, where + ": one copy, for union");
    }
}
