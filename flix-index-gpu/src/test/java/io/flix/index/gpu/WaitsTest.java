package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

/** Waits without a device: failures of work on other threads come back as thrown, and after a failure as suppressed. */
class WaitsTest {

    @Test
    void aFailedFutureThrowsItsOwnFailureNotTheWrapper() {
        final IllegalStateException cause = new IllegalStateException("copy to the host failed");
        final CompletableFuture<Void> f = CompletableFuture.runAsync(() -> {
            throw cause;
        });
        assertSame(cause, assertThrows(IllegalStateException.class, () -> Waits.join(f)));
        Waits.join(CompletableFuture.completedFuture(null));
    }

    @Test
    void onlyACompletionExceptionAroundARuntimeExceptionIsUnwrapped() {
        final IllegalArgumentException cause = new IllegalArgumentException("bad");
        assertSame(cause, Waits.unwrap(new CompletionException(cause)));
        final CompletionException checkedCause = new CompletionException(new Exception("checked"));
        assertSame(checkedCause, Waits.unwrap(checkedCause));
        final IllegalStateException plain = new IllegalStateException("plain");
        assertSame(plain, Waits.unwrap(plain));
    }

    @Test
    void afterAFailureTheWaitRunsAndItsFailureIsSuppressed() {
        final RuntimeException failure = new RuntimeException("update failed");
        final AtomicBoolean waited = new AtomicBoolean();
        Waits.afterFailure(failure, () -> waited.set(true));
        assertTrue(waited.get());
        assertArrayEquals(new Throwable[0], failure.getSuppressed());
        final IllegalStateException late = new IllegalStateException("values' copy failed");
        Waits.afterFailure(failure, () -> {
            throw late;
        });
        assertArrayEquals(new Throwable[] {late}, failure.getSuppressed());
    }
}
