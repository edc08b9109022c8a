package io.flix.flink.taskmanager;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.table.functions.FunctionContext;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The index library's statics are released with the job's class loader: the operators and the SQL functions register
 * one hook with Flink, under one name, where the library came with the job.
 */
class ClassLoaderReleaseTest {

    private final List<String> hooks = new ArrayList<>();
    private final List<Runnable> actions = new ArrayList<>();

    private RuntimeContext recordingContext() {
        return (RuntimeContext) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {RuntimeContext.class}, (proxy, method, args) -> {
                    if (method.getName().equals("registerUserCodeClassLoaderReleaseHookIfAbsent")) {
                        hooks.add((String) args[0]);
                        actions.add((Runnable) args[1]);
                        return null;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    @Test
    void anOperatorRegistersTheReleaseWhereTheLibraryCameWithTheJob() {
        assertTrue(ClassLoaderRelease.indexLibraryCameWithTheJob(), "the tests load both from one class path");
        ClassLoaderRelease.register(recordingContext());
        assertEquals(List.of(ClassLoaderRelease.HOOK_NAME), hooks);
        actions.get(0).run(); // releases nothing here (no GPU index was opened) and fails on nothing
    }

    @Test
    void aSqlFunctionReachesTheRuntimeContextItsContextWraps() {
        ClassLoaderRelease.register(new FunctionContext(recordingContext()));
        assertEquals(List.of(ClassLoaderRelease.HOOK_NAME), hooks);
    }
}
