package io.flix.flink.shared;

import io.flix.flink.payload.PayloadStore;
import io.flix.flink.testing.Eventually;
import io.flix.index.FlixIndex;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What the shared dimensions open in this JVM hold, read from a test the way lookups read them (under the
 * dimension's shared lock). The task managers of a MiniCluster share the test's JVM, each with its own dimension.
 */
final class DimensionContents {

    /** A safety net for waits on events that must happen; never reached when the code works. */
    static final long SAFETY_NET_SECONDS = Eventually.SAFETY_NET_SECONDS;

    private DimensionContents() {
    }

    /** Each key's payload in the dimension, null where the key is absent. */
    static Map<Long, Object> payloads(TaskManagerDimension<?> dimension, long[] keys) throws Exception {
        return read(dimension, keys);
    }

    private static <P> Map<Long, Object> read(TaskManagerDimension<P> dimension, long[] keys) throws Exception {
        return dimension.read((lookups, payloads) -> {
            final long[] values = new long[keys.length];
            lookups.get(keys, keys.length, values);
            final PayloadStore.Reader<P> reader = payloads.reader();
            final Map<Long, Object> found = new HashMap<>();
            for (int i = 0; i < keys.length; i++) {
                found.put(keys[i], values[i] == FlixIndex.NOT_FOUND ? null : reader.payload(values[i], keys[i]));
            }
            return found;
        });
    }

    /** The payload of one key in the dimension, null where absent. */
    static Object payload(TaskManagerDimension<?> dimension, long key) throws Exception {
        return payloads(dimension, new long[] {key}).get(key);
    }

    /** A condition on one task manager's dimension. */
    @FunctionalInterface
    interface Condition {
        boolean holds(TaskManagerDimension<?> dimension) throws Exception;
    }

    /**
     * Waits until the dimension is started on exactly {@code taskManagers} task managers and the condition holds on
     * each, then returns them; fails with {@code what} after the safety net.
     */
    static List<TaskManagerDimension<?>> await(String dimensionId, int taskManagers, Condition condition, String what)
            throws Exception {
        Eventually.await(what + " (on " + taskManagers + " task managers)", () -> {
            final List<TaskManagerDimension<?>> started = TaskManagerDimensions.started(dimensionId);
            return started.size() == taskManagers && allHold(started, condition);
        });
        return TaskManagerDimensions.started(dimensionId);
    }

    /**
     * A future that completes once the dimension, started on {@code taskManagers} task managers, holds {@code keys}
     * keys on each (the updates are all applied); for gating a job's lookups from a thread of its own.
     */
    static java.util.concurrent.CompletableFuture<Void> loaded(String dimensionId, int taskManagers, long keys) {
        final java.util.concurrent.CompletableFuture<Void> loaded = new java.util.concurrent.CompletableFuture<>();
        final Thread waiter = new Thread(() -> {
            try {
                await(dimensionId, taskManagers, d -> d.size() == keys, keys + " keys in every dimension");
                loaded.complete(null);
            } catch (Throwable t) {
                loaded.completeExceptionally(t);
            }
        }, "loaded-" + dimensionId);
        waiter.setDaemon(true);
        waiter.start();
        return loaded;
    }

    private static boolean allHold(List<TaskManagerDimension<?>> dimensions, Condition condition) throws Exception {
        for (TaskManagerDimension<?> dimension : dimensions) {
            if (!condition.holds(dimension)) {
                return false;
            }
        }
        return true;
    }
}
