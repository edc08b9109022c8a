package io.flix.examples.cluster;

import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.concurrent.Callable;

/**
 * A resource shared by every class of the test run: the first class to ask starts it and it lives in JUnit's root
 * store, which closes it (an {@link AutoCloseable}) when the run ends.
 */
final class RunWide {

    private RunWide() {
    }

    static <T> T getOrStart(ExtensionContext context, Class<?> owner, Class<T> type, String what, Callable<T> start) {
        return context.getRoot().getStore(ExtensionContext.Namespace.create(owner)).getOrComputeIfAbsent(what, key -> {
            try {
                return start.call();
            } catch (Exception e) {
                throw new IllegalStateException(what + " did not start", e);
            }
        }, type);
    }

    /** What a field of an extension holds once its class's {@code beforeAll} ran. */
    static <T> T started(T resource, String what) {
        if (resource == null) {
            throw new IllegalStateException(what + " is not started: register the extension as a static field");
        }
        return resource;
    }
}
