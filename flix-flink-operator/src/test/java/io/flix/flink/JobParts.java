package io.flix.flink;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

import java.util.ArrayList;
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
    static final Map<String, List<String>> COLLECTED = new ConcurrentHashMap<>();

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

    /**
     * A sink whose contents are checkpointed operator state, published when the job finishes: what it publishes
     * is what an exactly-once sink would have committed.
     */
    static final class CollectingOperator<T> extends AbstractStreamOperator<Void>
            implements OneInputStreamOperator<T, Void> {
        private final String run;
        private transient List<String> seen;
        private transient ListState<String> state;

        CollectingOperator(String run) {
            this.run = run;
        }

        @Override
        public void initializeState(StateInitializationContext context) throws Exception {
            super.initializeState(context);
            state = context.getOperatorStateStore().getListState(new ListStateDescriptor<>("seen", Types.STRING));
            seen = new ArrayList<>();
            for (String s : state.get()) {
                seen.add(s);
            }
        }

        @Override
        public void processElement(StreamRecord<T> element) {
            seen.add(String.valueOf(element.getValue()));
        }

        @Override
        public void snapshotState(StateSnapshotContext context) throws Exception {
            super.snapshotState(context);
            state.update(seen);
        }

        @Override
        public void finish() throws Exception {
            COLLECTED.computeIfAbsent(run, r -> java.util.Collections.synchronizedList(new ArrayList<>()))
                    .addAll(seen);
            super.finish();
        }
    }
}
