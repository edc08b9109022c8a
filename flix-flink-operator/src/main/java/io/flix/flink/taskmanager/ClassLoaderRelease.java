package io.flix.flink.taskmanager;

import io.flix.index.FlixIndex;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.table.functions.FunctionContext;

import java.lang.reflect.Field;

/**
 * Releases what the index library holds in statics of the job's class loader (the GPU backend's copy threads, pinned
 * memory, kernel modules, its hold on the devices' contexts) when Flink releases that class loader: a resubmitted job
 * or a second job gets a class loader of its own, and the task manager must not keep the old one's.
 *
 * <p>Only where the index library came with the job: in Flink's {@code lib/}, loaded parent-first, it serves every job
 * of the task manager for the life of the process, and no job may release it.
 */
public final class ClassLoaderRelease {

    /** The hook's name: Flink keeps one hook of a name per class loader. */
    static final String HOOK_NAME = "flix-index-backends";

    private ClassLoaderRelease() {
    }

    /** Registers the release with the class loader of the job that {@code context} runs. */
    public static void register(RuntimeContext context) {
        if (indexLibraryCameWithTheJob()) {
            context.registerUserCodeClassLoaderReleaseHookIfAbsent(HOOK_NAME, FlixIndex::releaseBackendResources);
        }
    }

    /**
     * As {@link #register(RuntimeContext)}, for a SQL function: Flink's {@link FunctionContext} hands out no release
     * hook, so the runtime context it wraps is taken; where a Flink version hides it otherwise, the statics stay
     * until the class loader is collected.
     */
    public static void register(FunctionContext context) {
        final RuntimeContext runtime = runtimeContextOf(context);
        if (runtime != null) {
            register(runtime);
        }
    }

    /**
     * Where the index library was loaded from, as the {@code flixIndexLibrary} gauges show it: "job" (the job's jar,
     * in the job's class loader) or "task manager" (Flink's {@code lib/}, loaded parent-first for every job).
     */
    public static String indexLibraryHome() {
        return indexLibraryCameWithTheJob() ? "job" : "task manager";
    }

    /** Whether the index library was loaded by the class loader that loaded the operators (the job's). */
    static boolean indexLibraryCameWithTheJob() {
        return FlixIndex.class.getClassLoader() == ClassLoaderRelease.class.getClassLoader();
    }

    private static RuntimeContext runtimeContextOf(FunctionContext context) {
        try {
            final Field field = FunctionContext.class.getDeclaredField("context");
            field.setAccessible(true);
            return field.get(context) instanceof RuntimeContext runtime ? runtime : null;
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }
}
