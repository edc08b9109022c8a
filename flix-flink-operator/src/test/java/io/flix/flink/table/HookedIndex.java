package io.flix.flink.table;

import io.flix.index.Backend;
import io.flix.index.FlixIndex;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;

/** An index whose calls a test can hold or fail: a hook runs on the calling thread before every call. */
final class HookedIndex {

    /** Runs before each index call, with the method's name; what it throws, the call throws. */
    @FunctionalInterface
    interface Hook {
        void before(String method) throws Throwable;
    }

    private HookedIndex() {
    }

    static FlixIndex wrap(FlixIndex index, Hook hook) {
        return wrap(index, hook, index.backend());
    }

    /** As {@link #wrap(FlixIndex, Hook)}, the index saying it runs on {@code backend}. */
    static FlixIndex wrap(FlixIndex index, Hook hook, Backend backend) {
        return (FlixIndex) Proxy.newProxyInstance(FlixIndex.class.getClassLoader(), new Class<?>[] {FlixIndex.class},
                (proxy, method, args) -> {
                    hook.before(method.getName());
                    if (method.getName().equals("backend")) {
                        return backend;
                    }
                    try {
                        return method.invoke(index, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
