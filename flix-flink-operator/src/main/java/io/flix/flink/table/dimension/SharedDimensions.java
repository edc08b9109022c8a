package io.flix.flink.table.dimension;

import io.flix.flink.table.snapshot.SnapshotWriter;
import io.flix.flink.table.spec.DimensionSpec;
import io.flix.flink.taskmanager.ClassLoaderRelease;
import io.flix.flink.taskmanager.TaskManagerGpus;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import org.apache.flink.table.functions.FunctionContext;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The task manager's open dimensions, by {@link DimensionSpec#identity()}: the first lookup subtask of a table
 * opens its dimension (index, changelog reader), later ones with an equal identity share it, and the last one to
 * close frees it. Static, so per class loader: with the connector in the job's jar the subtasks of one job share;
 * with it in Flink's {@code lib/}, equal tables of several jobs on one task manager share too.
 */
public final class SharedDimensions {

    private static final Map<String, SharedDimension> OPEN = new HashMap<>();

    private SharedDimensions() {
    }

    /**
     * The dimension for a table, opened and started if no subtask holds it yet or the one held has failed (its
     * holders keep it until they close; a restarted job reads the changelog afresh); pair with {@link #release}.
     */
    public static SharedDimension acquire(DimensionSpec spec) {
        return acquire(spec, FlixIndex::open);
    }

    /**
     * As {@link #acquire(DimensionSpec)}, for a lookup function of a job: a new dimension's index on the GPUs Flink
     * assigned to the task manager, and the job's class loader releases the index library's statics with it.
     */
    public static SharedDimension acquire(DimensionSpec spec, FunctionContext context) {
        ClassLoaderRelease.register(context);
        final List<Integer> gpus = TaskManagerGpus.of(
                TaskManagerGpus.assignedTo(context), spec.indexSettings().backend());
        return acquire(spec, () -> new SharedDimension(spec, gpus, FlixIndex::open, null));
    }

    /** As {@link #acquire(DimensionSpec)}, a new dimension's index opened by {@code openIndex}; for tests. */
    public static SharedDimension acquire(DimensionSpec spec, Function<FlixConfig, FlixIndex> openIndex) {
        return acquire(spec, openIndex, null);
    }

    /** As {@link #acquire(DimensionSpec, Function)}, a new dimension's snapshots written with the hooks; for tests. */
    public static SharedDimension acquire(DimensionSpec spec, Function<FlixConfig, FlixIndex> openIndex,
                                   SnapshotWriter.Hooks snapshotHooks) {
        return acquire(spec, () -> new SharedDimension(spec, openIndex, snapshotHooks));
    }

    private static SharedDimension acquire(DimensionSpec spec, Supplier<SharedDimension> opener) {
        synchronized (OPEN) {
            SharedDimension dimension = OPEN.get(spec.identity());
            if (dimension == null || dimension.failure() != null) {
                dimension = opener.get();
                dimension.start();
                OPEN.put(spec.identity(), dimension);
            }
            dimension.references++;
            return dimension;
        }
    }

    /** Drops one subtask's hold; the last one closes the dimension (outside the registry's lock). */
    public static void release(SharedDimension dimension) throws InterruptedException {
        synchronized (OPEN) {
            if (--dimension.references > 0) {
                return;
            }
            OPEN.remove(dimension.spec.identity(), dimension);
        }
        dimension.close();
    }

    /** The open dimension of a table, or null; for tests. */
    public static SharedDimension find(String identity) {
        synchronized (OPEN) {
            return OPEN.get(identity);
        }
    }

    /** Open dimensions whose changelog is the given Kafka topic or file; for tests. */
    public static List<SharedDimension> openOn(String topicOrPath) {
        synchronized (OPEN) {
            return OPEN.values().stream()
                    .filter(d -> topicOrPath.equals(d.spec.topic()) || topicOrPath.equals(d.spec.filePath()))
                    .toList();
        }
    }

    /** Holders of an open dimension; for tests. */
    public static int references(SharedDimension dimension) {
        synchronized (OPEN) {
            return dimension.references;
        }
    }
}
