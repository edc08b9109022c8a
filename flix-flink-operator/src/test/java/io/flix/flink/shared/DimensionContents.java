package io.flix.flink.shared;

import io.flix.flink.PayloadStore;
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
    static final long SAFETY_NET_SECONDS = 300;

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
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(SAFETY_NET_SECONDS);
        while (true) {
            final List<TaskManagerDimension<?>> started = TaskManagerDimensions.started(dimensionId);
            if (started.size() == taskManagers && allHold(started, condition)) {
                return started;
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not reached within the safety net: " + what + " (dimensions started: "
                        + started.size() + " of " + taskManagers + ")");
            }
            Thread.sleep(2);
        }
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
