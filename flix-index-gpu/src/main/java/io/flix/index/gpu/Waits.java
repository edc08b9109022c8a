package io.flix.index.gpu;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * Waits for work that runs on other threads (copies, the narrowing of a range call's offsets), throwing its failure
 * as that work threw it rather than wrapped.
 */
final class Waits {

    private Waits() {
    }

    /** Waits for {@code f}; throws its failure as thrown. */
    static void join(CompletableFuture<?> f) {
        try {
            f.join();
        } catch (CompletionException e) {
            throw unwrap(e);
        }
    }

    /** The failure a {@link CompletionException} wraps, where it is a RuntimeException; else {@code e}. */
    static RuntimeException unwrap(RuntimeException e) {
        if (e instanceof CompletionException && e.getCause() instanceof RuntimeException cause) {
            return cause;
        }
        return e;
    }

    /**
     * Runs {@code wait} after {@code failure}, which the caller then throws: work still under way must not outlive
     * the call, and a failure of the wait is added to {@code failure} as suppressed.
     */
    static void afterFailure(Throwable failure, Runnable wait) {
        try {
            wait.run();
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }
}
