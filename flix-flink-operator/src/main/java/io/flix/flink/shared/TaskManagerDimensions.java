package io.flix.flink.shared;

import io.flix.flink.IndexSettings;
import io.flix.flink.dimension.DimensionIndex;
import io.flix.index.FlixIndex;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.taskmanager.TaskManagerRuntimeInfo;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The shared-mode dimensions open in this JVM, one per task manager, job and enrichment. The first operator
 * subtask of an enrichment on a task manager (a writer or a lookup subtask) opens its dimension; the others share
 * it; the last to let go closes it. A task manager is told apart by its runtime info object, so that the task
 * managers of one MiniCluster, which share a JVM, each hold their own dimension as separate processes would.
 */
final class TaskManagerDimensions {

    private static final Map<Key, Held> OPEN = new HashMap<>();

    private TaskManagerDimensions() {
    }

    /** Who holds a dimension: the task manager (by identity), the job and the enrichment's dimension id. */
    private record Key(TaskManagerIdentity taskManager, JobID job, String dimension) {
    }

    /** Compares a task manager's runtime info object by identity. */
    private record TaskManagerIdentity(Object runtimeInfo) {
        @Override
        public boolean equals(Object o) {
            return o instanceof TaskManagerIdentity t && t.runtimeInfo == runtimeInfo;
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(runtimeInfo);
        }
    }

    private static final class Held {
        final TaskManagerDimension<?> dimension;
        int holders;

        Held(TaskManagerDimension<?> dimension) {
            this.dimension = dimension;
        }
    }

    /**
     * The dimension, opened where no subtask on this task manager holds it yet, on the task manager's GPUs
     * {@code taskManagerGpus} (CUDA ordinals, {@link io.flix.flink.taskmanager.TaskManagerGpus}); pair with
     * {@link #release}.
     */
    @SuppressWarnings("unchecked")
    static <P> TaskManagerDimension<P> acquire(TaskManagerRuntimeInfo taskManager, JobID job, String dimension,
                                               IndexSettings settings, TypeSerializer<P> payloadSerializer,
                                               int batchCapacity, List<Integer> taskManagerGpus) {
        final Key key = new Key(new TaskManagerIdentity(taskManager), job, dimension);
        synchronized (OPEN) {
            Held held = OPEN.get(key);
            if (held == null) {
                // up to a subtask per slot looks up at once
                final int slots = taskManager.getConfiguration().get(TaskManagerOptions.NUM_TASK_SLOTS);
                final FlixIndex index = DimensionIndex.open(settings, slots, taskManagerGpus);
                held = new Held(new TaskManagerDimension<>("'" + dimension + "' of job " + job, index,
                        settings.backend(),
                        payloadSerializer.duplicate(), batchCapacity));
                OPEN.put(key, held);
            }
            held.holders++;
            return (TaskManagerDimension<P>) held.dimension;
        }
    }

    /** Drops one subtask's hold; the last one closes the dimension. */
    static void release(TaskManagerDimension<?> dimension) {
        synchronized (OPEN) {
            for (Map.Entry<Key, Held> entry : OPEN.entrySet()) {
                final Held held = entry.getValue();
                if (held.dimension == dimension) {
                    if (--held.holders == 0) {
                        OPEN.remove(entry.getKey());
                        dimension.close();
                    }
                    return;
                }
            }
        }
    }

    /** Dimensions open in this JVM; for tests. */
    static int open() {
        synchronized (OPEN) {
            return OPEN.size();
        }
    }

    /** The started dimensions open in this JVM for a dimension id, one per task manager; for tests. */
    static java.util.List<TaskManagerDimension<?>> started(String dimension) {
        synchronized (OPEN) {
            return OPEN.entrySet().stream().filter(e -> e.getKey().dimension().equals(dimension))
                    .<TaskManagerDimension<?>>map(e -> e.getValue().dimension)
                    .filter(TaskManagerDimension::isStarted).toList();
        }
    }
}
