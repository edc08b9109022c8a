package io.flix.flink.shared;

import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.RoundRobinOperatorStateRepartitioner;
import org.apache.flink.runtime.checkpoint.StateObjectCollection;
import org.apache.flink.runtime.state.DefaultOperatorStateBackend;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.taskmanager.TaskManagerRuntimeInfo;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.apache.flink.util.StateMigrationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The dimension writer's state, subtask by subtask: one copy of the dimension per snapshot, written by the applier of
 * the task manager that runs writer subtask 0; handed whole to every subtask at any new parallelism; opened by one
 * applier per task manager; refused with both payload types named where the payload type changed incompatibly.
 *
 * <p>State is redistributed with Flink's own {@link RoundRobinOperatorStateRepartitioner}, given one list of handles
 * per old subtask as the job manager gives it (the harness's {@code repartitionOperatorState} takes each handle for
 * an old subtask, which does not fit a state written by one subtask of several).
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES) // a safety net: a snapshot that never completes fails, not hangs
class DimensionWriterOperatorTest {

    private static final String STATE = DefaultOperatorStateBackend.DEFAULT_OPERATOR_STATE_NAME;

    /** Writer subtasks and the task manager each runs on. */
    private record Placement(List<WriterHarness> harnesses,
                             List<DimensionWriterOperator<String>> writers) {
    }

    /**
     * Opens writer subtasks {@code 0..parallelism-1}, subtask {@code s} on task manager {@code taskManagerOf[s]}, in
     * the order given by {@code openOrder} (the first opened on a task manager becomes its applier), each restored
     * from {@code states[s]} where given.
     */
    private static Placement open(SimulatedJob job, String dimensionId, TaskManagerRuntimeInfo[] taskManagerOf,
                                  int[] openOrder, List<OperatorSubtaskState> states) throws Exception {
        final int parallelism = taskManagerOf.length;
        final List<WriterHarness> harnesses = new ArrayList<>();
        final List<DimensionWriterOperator<String>> writers = new ArrayList<>();
        for (int s = 0; s < parallelism; s++) {
            final DimensionWriterOperator<String> writer = SimulatedJob.writer(dimensionId, 50);
            writers.add(writer);
            harnesses.add(job.harness(writer, taskManagerOf[s], parallelism, s));
        }
        for (int s : openOrder) {
            if (states != null) {
                harnesses.get(s).initializeState(states.get(s));
            }
            harnesses.get(s).open();
        }
        return new Placement(harnesses, writers);
    }

    /** Sends every update to every subtask (the update stream is broadcast) and the oracle. */
    private static void broadcast(Placement placement, TreeMap<Long, String> oracle, List<Long> everSeen,
                                  SplittableRandom random, int updates, String tag) throws Exception {
        for (int i = 0; i < updates; i++) {
            final long key = !everSeen.isEmpty() && random.nextInt(3) == 0
                    ? everSeen.get(random.nextInt(everSeen.size())) : random.nextLong();
            everSeen.add(key);
            final EncodedUpdates update;
            if (random.nextInt(4) == 0) {
                update = SimulatedJob.delete(key);
                oracle.remove(key);
            } else {
                final String payload = tag + "-" + i;
                update = SimulatedJob.upsert(key, payload);
                oracle.put(key, payload);
            }
            for (var harness : placement.harnesses()) {
                harness.processElement(new StreamRecord<>(update));
            }
        }
    }

    private static OperatorSubtaskState[] snapshot(Placement placement, long checkpointId) throws Exception {
        final OperatorSubtaskState[] states = new OperatorSubtaskState[placement.harnesses().size()];
        for (int s = 0; s < states.length; s++) {
            placement.harnesses().get(s).prepareSnapshotPreBarrier(checkpointId);
            states[s] = placement.harnesses().get(s).snapshot(checkpointId, checkpointId);
        }
        return states;
    }

    /** What the job manager hands each new subtask: the old subtasks' raw operator state, repartitioned. */
    private static List<OperatorSubtaskState> redistribute(OperatorSubtaskState[] old, int newParallelism) {
        final List<List<OperatorStateHandle>> perOldSubtask = new ArrayList<>();
        for (OperatorSubtaskState state : old) {
            perOldSubtask.add(new ArrayList<>(state.getRawOperatorState()));
        }
        final List<OperatorSubtaskState> assigned = new ArrayList<>();
        for (List<OperatorStateHandle> handles : RoundRobinOperatorStateRepartitioner.INSTANCE
                .repartitionState(perOldSubtask, old.length, newParallelism)) {
            assigned.add(OperatorSubtaskState.builder()
                    .setRawOperatorState(new StateObjectCollection<>(handles)).build());
        }
        return assigned;
    }

    /** The partitions of raw operator state a subtask wrote or is handed, and their distribution modes. */
    private static List<OperatorStateHandle.Mode> partitions(OperatorSubtaskState state) {
        final List<OperatorStateHandle.Mode> modes = new ArrayList<>();
        for (OperatorStateHandle handle : state.getRawOperatorState()) {
            final OperatorStateHandle.StateMetaInfo info = handle.getStateNameToPartitionOffsets().get(STATE);
            for (long ignored : info.getOffsets()) {
                modes.add(info.getDistributionMode());
            }
        }
        return modes;
    }

    private static void assertHolds(TreeMap<Long, String> oracle, List<Long> everSeen,
                                    TaskManagerDimension<?> dimension, String where) throws Exception {
        final long[] keys = everSeen.stream().distinct().mapToLong(Long::longValue).toArray();
        final Map<Long, Object> expected = new HashMap<>();
        for (long key : keys) {
            expected.put(key, oracle.get(key));
        }
        assertEquals(expected, DimensionContents.payloads(dimension, keys), where + ": every key ever written");
        assertEquals(oracle.size(), dimension.size(), where + ": no other key");
    }

    @Test
    void oneCopyPerSnapshotHandedWholeToEverySubtaskAtEveryParallelism() throws Exception {
        final String dimensionId = "writer-one-copy";
        final SplittableRandom random = new SplittableRandom(15);
        final TreeMap<Long, String> oracle = new TreeMap<>();
        final List<Long> everSeen = new ArrayList<>(List.of(Long.MIN_VALUE, Long.MAX_VALUE, 0L));
        oracle.put(Long.MIN_VALUE, "min");
        oracle.put(Long.MAX_VALUE, "max");
        try (SimulatedJob job = new SimulatedJob()) {
            // parallelism 4 on two task managers; on the first, subtask 1 registers before 0 and is the applier
            final TaskManagerRuntimeInfo a = SimulatedJob.taskManager();
            final TaskManagerRuntimeInfo b = SimulatedJob.taskManager();
            final Placement four = open(job, dimensionId, new TaskManagerRuntimeInfo[] {a, a, b, b},
                    new int[] {1, 0, 3, 2}, null);
            assertTrue(four.writers().get(1).isApplier());
            assertFalse(four.writers().get(0).isApplier());
            assertTrue(four.writers().get(3).isApplier());
            assertFalse(four.writers().get(2).isApplier());
            for (var harness : four.harnesses()) {
                harness.processElement(new StreamRecord<>(SimulatedJob.upsert(Long.MIN_VALUE, "min")));
                harness.processElement(new StreamRecord<>(SimulatedJob.upsert(Long.MAX_VALUE, "max")));
            }
            broadcast(four, oracle, everSeen, random, 3000, "p4");
            final OperatorSubtaskState[] fromFour = snapshot(four, 1);

            assertEquals(List.of(OperatorStateHandle.Mode.UNION), partitions(fromFour[1]),
                    "the applier on the task manager of subtask 0 writes the one copy, for union redistribution");
            for (int s : new int[] {0, 2, 3}) {
                assertEquals(List.of(), partitions(fromFour[s]), "subtask " + s + " writes nothing");
            }
            for (int s = 0; s < 4; s++) {
                // Flink sees the subtasks of union state finish together only among those that report state
                assertTrue(fromFour[s].hasState(), "subtask " + s + " reports state");
            }
            for (var harness : four.harnesses()) {
                job.close(harness);
            }

            // parallelism 3 on three task managers: each subtask is handed the copy, each applier builds from it
            final List<OperatorSubtaskState> toThree = redistribute(fromFour, 3);
            final OperatorStateHandle copy = fromFour[1].getRawOperatorState().iterator().next();
            for (OperatorSubtaskState state : toThree) {
                assertEquals(List.of(OperatorStateHandle.Mode.UNION), partitions(state));
                assertSame(copy.getDelegateStateHandle(),
                        state.getRawOperatorState().iterator().next().getDelegateStateHandle(), "the one copy");
            }
            final Placement three = open(job, dimensionId, new TaskManagerRuntimeInfo[] {
                    SimulatedJob.taskManager(), SimulatedJob.taskManager(), SimulatedJob.taskManager()},
                    new int[] {0, 1, 2}, toThree);
            for (int s = 0; s < 3; s++) {
                final TaskManagerDimension<String> dimension = three.writers().get(s).dimension();
                assertTrue(three.writers().get(s).isApplier());
                assertEquals(1, dimension.builds(), "subtask " + s + "'s task manager built its index once");
                assertHolds(oracle, everSeen, dimension, "restored at parallelism 3, subtask " + s);
            }
            broadcast(three, oracle, everSeen, random, 2000, "p3");
            final OperatorSubtaskState[] fromThree = snapshot(three, 2);
            assertEquals(List.of(OperatorStateHandle.Mode.UNION), partitions(fromThree[0]));
            assertEquals(List.of(), partitions(fromThree[1]));
            assertEquals(List.of(), partitions(fromThree[2]));
            for (var harness : three.harnesses()) {
                job.close(harness);
            }

            // parallelism 3 again (as a failover restores), now on two task managers
            final TaskManagerRuntimeInfo c = SimulatedJob.taskManager();
            final TaskManagerRuntimeInfo d = SimulatedJob.taskManager();
            final List<OperatorSubtaskState> toThreeAgain = redistribute(fromThree, 3);
            final Placement again = open(job, dimensionId, new TaskManagerRuntimeInfo[] {c, d, d},
                    new int[] {2, 1, 0}, toThreeAgain);
            for (int s = 0; s < 3; s++) {
                assertEquals(List.of(OperatorStateHandle.Mode.UNION), partitions(toThreeAgain.get(s)));
            }
            assertTrue(again.writers().get(0).isApplier());
            assertTrue(again.writers().get(2).isApplier());
            assertEquals(1, again.writers().get(0).dimension().builds());
            assertEquals(1, again.writers().get(2).dimension().builds());
            assertHolds(oracle, everSeen, again.writers().get(0).dimension(), "restored at parallelism 3 again");
            assertHolds(oracle, everSeen, again.writers().get(2).dimension(), "restored at parallelism 3 again");
            broadcast(again, oracle, everSeen, random, 1000, "p3 again");
            final OperatorSubtaskState[] fromThreeAgain = snapshot(again, 3);
            assertEquals(List.of(OperatorStateHandle.Mode.UNION), partitions(fromThreeAgain[0]));
            assertEquals(List.of(), partitions(fromThreeAgain[1]));
            assertEquals(List.of(), partitions(fromThreeAgain[2]), "the applier of the other task manager");
            for (var harness : again.harnesses()) {
                job.close(harness);
            }

            // parallelism 5 on one task manager: the first subtask opened applies and builds, once
            final TaskManagerRuntimeInfo one = SimulatedJob.taskManager();
            final List<OperatorSubtaskState> toFive = redistribute(fromThreeAgain, 5);
            final Placement five = open(job, dimensionId, new TaskManagerRuntimeInfo[] {one, one, one, one, one},
                    new int[] {3, 0, 1, 2, 4}, toFive);
            final TaskManagerDimension<String> shared = five.writers().get(3).dimension();
            for (int s = 0; s < 5; s++) {
                assertEquals(List.of(OperatorStateHandle.Mode.UNION), partitions(toFive.get(s)));
                assertSame(shared, five.writers().get(s).dimension(), "one dimension on the task manager");
                assertEquals(s == 3, five.writers().get(s).isApplier());
            }
            assertEquals(1, shared.builds(), "the task manager built its index once");
            assertHolds(oracle, everSeen, shared, "restored at parallelism 5 on one task manager");

            // and back to parallelism 1
            final OperatorSubtaskState[] fromFive = snapshot(five, 4);
            assertEquals(List.of(OperatorStateHandle.Mode.UNION), partitions(fromFive[3]),
                    "the applier writes: subtask 0 runs on its task manager");
            for (var harness : five.harnesses()) {
                job.close(harness);
            }
            final Placement single = open(job, dimensionId, new TaskManagerRuntimeInfo[] {SimulatedJob.taskManager()},
                    new int[] {0}, redistribute(fromFive, 1));
            assertHolds(oracle, everSeen, single.writers().get(0).dimension(), "restored at parallelism 1");
        }
    }

    @Test
    void aNonApplierAppliesAndWritesNothing() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final TaskManagerRuntimeInfo taskManager = SimulatedJob.taskManager();
            final Placement two = open(job, "writer-non-applier",
                    new TaskManagerRuntimeInfo[] {taskManager, taskManager}, new int[] {0, 1}, null);
            final DimensionWriterOperator<String> applier = two.writers().get(0);
            final DimensionWriterOperator<String> other = two.writers().get(1);
            assertFalse(other.isApplier());
            for (int i = 0; i < 120; i++) {
                final EncodedUpdates update = SimulatedJob.upsert(i, "v" + i);
                for (var harness : two.harnesses()) {
                    harness.processElement(new StreamRecord<>(update));
                }
            }
            final OperatorSubtaskState[] states = snapshot(two, 1);
            assertEquals(120, applier.dimension().appliedUpdates(), "each update applied once on the task manager");
            assertEquals(120, applier.dimension().size());
            assertEquals(List.of(OperatorStateHandle.Mode.UNION), partitions(states[0]));
            assertEquals(List.of(), partitions(states[1]), "the non-applier writes nothing");

            // a writer on another task manager, which does not run subtask 0, applies but writes nothing either
            final TaskManagerRuntimeInfo elsewhere = SimulatedJob.taskManager();
            final DimensionWriterOperator<String> third = SimulatedJob.writer("writer-non-applier-2", 50);
            final DimensionWriterOperator<String> fourth = SimulatedJob.writer("writer-non-applier-2", 50);
            final var thirdHarness = job.harness(third, SimulatedJob.taskManager(), 2, 0);
            final var fourthHarness = job.harness(fourth, elsewhere, 2, 1);
            thirdHarness.open();
            fourthHarness.open();
            fourthHarness.processElement(new StreamRecord<>(SimulatedJob.upsert(7, "seven")));
            fourthHarness.prepareSnapshotPreBarrier(1);
            assertTrue(fourth.isApplier());
            assertEquals(1, fourth.dimension().size());
            assertEquals(List.of(), partitions(fourthHarness.snapshot(1, 1)));
        }
    }

    @Test
    void aRestoreWithAnIncompatiblePayloadTypeFailsNamingBothTypes() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final Placement strings = open(job, "writer-incompatible",
                    new TaskManagerRuntimeInfo[] {SimulatedJob.taskManager()}, new int[] {0}, null);
            strings.harnesses().get(0).processElement(new StreamRecord<>(SimulatedJob.upsert(1, "one")));
            final OperatorSubtaskState[] state = snapshot(strings, 1);
            job.close(strings.harnesses().get(0));

            final DimensionWriterOperator<Long> longs = new DimensionWriterOperator<>("writer-incompatible",
                    SimulatedJob.CPU, LongSerializer.INSTANCE, 50, 0);
            final var harness = job.harness(longs, SimulatedJob.taskManager(), 1, 0);
            final Exception failure = assertThrows(Exception.class,
                    () -> harness.initializeState(redistribute(state, 1).get(0)));
            Throwable cause = failure;
            while (cause != null && !(cause instanceof StateMigrationException)) {
                cause = cause.getCause();
            }
            assertNotNull(cause, "a StateMigrationException in " + failure);
            final String message = cause.getMessage();
            assertTrue(message.contains("org.apache.flink.api.common.typeutils.base.StringSerializer (of "
                    + "java.lang.String)"), message);
            assertTrue(message.contains("org.apache.flink.api.common.typeutils.base.LongSerializer (of "
                    + "java.lang.Long)"), message);
        }
    }

    /**
     * The applier applies a batch on its apply thread while it receives the next: an apply that fails (here a payload
     * of 3 bytes for a dimension of 8-byte longs) fails the writer at its next barrier, naming the update, and the
     * batches before it stay applied.
     */
    @Test
    void aBatchThatFailsOnTheApplyThreadFailsTheWriterAtItsNextBarrierNamingTheUpdate() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final DimensionWriterOperator<Long> writer = new DimensionWriterOperator<>("writer-apply-failure",
                    SimulatedJob.CPU, LongSerializer.INSTANCE, 1, 0);
            final WriterHarness harness = job.harness(writer, SimulatedJob.taskManager(), 1, 0);
            harness.open();
            final EncodedUpdates.Builder good = new EncodedUpdates.Builder(32);
            good.upsert(4, new byte[] {0, 0, 0, 0, 0, 0, 0, 44});
            harness.processElement(new StreamRecord<>(good.build()));
            final EncodedUpdates.Builder bad = new EncodedUpdates.Builder(32);
            bad.upsert(5, new byte[] {1, 2, 3});
            harness.processElement(new StreamRecord<>(bad.build()));

            final Exception failure = assertThrows(Exception.class, () -> harness.prepareSnapshotPreBarrier(1));
            assertTrue(failure.getMessage().contains("key 5 has a payload of 3 bytes"), failure.getMessage());
            assertEquals(1, writer.dimension().size(), "the batch before the failed one stays applied");
        }
    }

    /**
     * The flush interval applies the updates held now, also after a full batch was handed to the apply thread, whose
     * holder of updates the writer takes turns with.
     */
    @Test
    void theFlushIntervalAppliesWhatIsHeldAfterAFullBatchWasHandedOver() throws Exception {
        try (SimulatedJob job = new SimulatedJob()) {
            final DimensionWriterOperator<String> writer = new DimensionWriterOperator<>("writer-interval",
                    SimulatedJob.CPU, StringSerializer.INSTANCE, 2, 10);
            final WriterHarness harness = job.harness(writer, SimulatedJob.taskManager(), 1, 0);
            harness.open();
            harness.setProcessingTime(0);
            for (long key = 1; key <= 3; key++) {
                harness.processElement(new StreamRecord<>(SimulatedJob.upsert(key, "v" + key)));
            }
            harness.awaitApplied();
            assertEquals(2, writer.dimension().size(), "the full batch applied, the third update held");

            harness.setProcessingTime(10);
            harness.awaitApplied();
            assertEquals(3, writer.dimension().size(), "the interval applied the update held");
        }
    }
}
