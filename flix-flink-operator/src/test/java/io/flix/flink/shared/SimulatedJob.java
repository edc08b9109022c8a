package io.flix.flink.shared;

import io.flix.flink.IndexSettings;
import io.flix.index.Backend;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.operators.testutils.MockEnvironmentBuilder;
import org.apache.flink.runtime.taskmanager.TaskManagerRuntimeInfo;
import org.apache.flink.runtime.util.TestingTaskManagerRuntimeInfo;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Operator harnesses of one job placed on simulated task managers: a task manager is its runtime info object, which
 * is how the shared dimensions tell task managers apart, so harnesses given the same one share a dimension. Closes
 * what it opened.
 */
final class SimulatedJob implements AutoCloseable {

    static final int MAX_PARALLELISM = 128;
    static final IndexSettings CPU = IndexSettings.defaults().withBackend(Backend.CPU).withThreads(1);

    private final JobID job = new JobID();
    private final List<AbstractStreamOperatorTestHarness<?>> harnesses = new ArrayList<>();
    private final List<MockEnvironment> environments = new ArrayList<>();

    /** A new task manager. */
    static TaskManagerRuntimeInfo taskManager() {
        return new TestingTaskManagerRuntimeInfo();
    }

    /** A harness for subtask {@code subtask} of {@code parallelism}, on the task manager given. */
    <I, O> OneInputStreamOperatorTestHarness<I, O> harness(OneInputStreamOperator<I, O> operator,
                                                           TaskManagerRuntimeInfo taskManager, int parallelism,
                                                           int subtask) throws Exception {
        final OneInputStreamOperatorTestHarness<I, O> harness = new OneInputStreamOperatorTestHarness<>(operator,
                environment(taskManager, parallelism, subtask));
        harnesses.add(harness);
        return harness;
    }

    /** A harness for writer subtask {@code subtask} of {@code parallelism}. */
    WriterHarness harness(DimensionWriterOperator<?> writer, TaskManagerRuntimeInfo taskManager, int parallelism,
                          int subtask) throws Exception {
        final WriterHarness harness = new WriterHarness(writer, environment(taskManager, parallelism, subtask));
        harnesses.add(harness);
        return harness;
    }

    private MockEnvironment environment(TaskManagerRuntimeInfo taskManager, int parallelism, int subtask) {
        final MockEnvironment environment = new MockEnvironmentBuilder()
                .setTaskName("subtask " + subtask + " of " + parallelism)
                .setJobID(job)
                .setTaskManagerRuntimeInfo(taskManager)
                .setParallelism(parallelism)
                .setMaxParallelism(MAX_PARALLELISM)
                .setSubtaskIndex(subtask)
                .build();
        environments.add(environment);
        return environment;
    }

    /** A dimension writer with String payloads, applying every {@code batchSize} updates (no timer). */
    static DimensionWriterOperator<String> writer(String dimensionId, int batchSize) {
        return new DimensionWriterOperator<>(dimensionId, CPU, StringSerializer.INSTANCE, batchSize, 0);
    }

    /** A block of one upsert, as the update encoder would send it. */
    static EncodedUpdates upsert(long key, String payload) throws IOException {
        final DataOutputSerializer out = new DataOutputSerializer(32);
        StringSerializer.INSTANCE.serialize(payload, out);
        final EncodedUpdates.Builder block = new EncodedUpdates.Builder(64);
        block.upsert(key, out.getCopyOfBuffer());
        return block.build();
    }

    /** A block of one delete. */
    static EncodedUpdates delete(long key) throws IOException {
        final EncodedUpdates.Builder block = new EncodedUpdates.Builder(16);
        block.delete(key);
        return block.build();
    }

    /** Closes one harness now (its operator lets go of its dimension). */
    void close(AbstractStreamOperatorTestHarness<?> harness) throws Exception {
        if (harnesses.remove(harness)) {
            harness.close();
        }
    }

    /** Closes the harnesses not closed yet, last opened first, and their environments. */
    @Override
    public void close() throws Exception {
        Exception failure = null;
        for (int i = harnesses.size() - 1; i >= 0; i--) {
            try {
                harnesses.get(i).close();
            } catch (Exception e) {
                failure = failure == null ? e : failure;
            }
        }
        harnesses.clear();
        for (MockEnvironment environment : environments) {
            try {
                environment.close();
            } catch (Exception e) {
                failure = failure == null ? e : failure;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
