package io.flix.flink;

import io.flix.flink.testing.CommittedOutput;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** Pieces of the MiniCluster test jobs; they talk to the test through statics, as they run in the test's JVM. */
final class JobParts {

    private JobParts() {
    }

    /** Per test run: payload function calls so far, and the gate that opens when they reach the expected count. */
    static final Map<String, AtomicLong> PAYLOAD_CALLS = new ConcurrentHashMap<>();
    static final Map<String, CompletableFuture<Void>> LOADED = new ConcurrentHashMap<>();
    /** Per test run: completes once a checkpoint taken after the run's load has completed (where a test says so). */
    static final Map<String, CompletableFuture<Void>> CHECKPOINTED_AFTER_LOAD = new ConcurrentHashMap<>();

    /** What a source waits for before it lets records through. */
    enum Gate {
        /** The run's updates are all in the operator. */
        LOADED,
        /** And a checkpoint taken after that has completed: any restore starts from the whole dimension. */
        CHECKPOINTED_AFTER_LOAD
    }
    /** What each run's {@link CommittedOutput} committed. */
    static final Map<String, List<String>> COLLECTED = CommittedOutput.PUBLISHED;

    static void reset(String run) {
        PAYLOAD_CALLS.put(run, new AtomicLong());
        LOADED.put(run, new CompletableFuture<>());
        CHECKPOINTED_AFTER_LOAD.put(run, new CompletableFuture<>());
        COLLECTED.remove(run);
    }

    /** The payload of an update; counts the calls and opens the run's gate at {@code updates} calls. */
    static PayloadFunction<Update, String> countingPayload(String run, long updates) {
        return update -> {
            if (PAYLOAD_CALLS.get(run).incrementAndGet() >= updates) {
                LOADED.get(run).complete(null);
            }
            return update.payload;
        };
    }

    /**
     * Holds a source back, without blocking its task (checkpoints go on), until the run's updates are all in the
     * operator; then lets records through at a rate.
     */
    static RateLimiterStrategy<?> gateThenRate(String run, double perSecond) {
        return gateThenRate(run, Gate.LOADED, perSecond);
    }

    /** Holds a source back, as above, until the gate opens; then lets records through at a rate. */
    static RateLimiterStrategy<?> gateThenRate(String run, Gate gate, double perSecond) {
        return parallelism -> new RateLimiter<>() {
            private final RateLimiter<?> rate = RateLimiterStrategy.perSecond(perSecond).createRateLimiter(parallelism);

            @Override
            public CompletionStage<Void> acquire(int permits) {
                final CompletableFuture<Void> open =
                        (gate == Gate.LOADED ? LOADED : CHECKPOINTED_AFTER_LOAD).get(run);
                return open.isDone() ? rate.acquire(permits) : open;
            }
        };
    }
}
