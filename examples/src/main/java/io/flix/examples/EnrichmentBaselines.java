package io.flix.examples;

import io.flix.examples.EnrichmentBenchmark.SerializableFunction;
import io.flix.flink.Enriched;
import io.flix.flink.LookupKind;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The enrichment benchmark's contestants that are not FliX: Flink's own keyed and broadcast state, and the two
 * ceilings that keep no state. Each reports the updates it applies and its opening to {@link BenchmarkProgress}.
 */
final class EnrichmentBaselines {

    private EnrichmentBaselines() {
    }

    /** The keyed baseline: exact lookups on keyed ValueState, one record at a time. */
    static final class ValueStateEnrichment<U, P> extends KeyedCoProcessFunction<Long, U, Order, Enriched<Order, P>> {
        private final SerializableFunction<U, P> payloadOf;
        private final TypeInformation<P> payloadType;
        private transient ValueState<P> payload;

        ValueStateEnrichment(SerializableFunction<U, P> payloadOf, TypeInformation<P> payloadType) {
            this.payloadOf = payloadOf;
            this.payloadType = payloadType;
        }

        @Override
        public void open(OpenContext openContext) {
            payload = getRuntimeContext().getState(new ValueStateDescriptor<>("payload", payloadType));
            BenchmarkProgress.functionOpened();
        }

        @Override
        public void processElement1(U update, Context ctx, Collector<Enriched<Order, P>> out) throws Exception {
            payload.update(payloadOf.apply(update));
            BenchmarkProgress.updateApplied();
        }

        @Override
        public void processElement2(Order order, Context ctx, Collector<Enriched<Order, P>> out) throws Exception {
            out.collect(new Enriched<>(order, LookupKind.EXACT, payload.value(), null, null));
        }
    }

    /**
     * Flink's replicated dimension: every subtask keeps the whole dimension in its broadcast state (a map, on the
     * heap whatever the state backend) and answers its lookups from it, one record at a time.
     */
    static final class BroadcastStateEnrichment<U, P> extends BroadcastProcessFunction<Order, U, Enriched<Order, P>> {
        private final MapStateDescriptor<Long, P> dimension;
        private final KeySelector<U, Long> key;
        private final SerializableFunction<U, P> payloadOf;

        BroadcastStateEnrichment(MapStateDescriptor<Long, P> dimension, KeySelector<U, Long> key,
                                 SerializableFunction<U, P> payloadOf) {
            this.dimension = dimension;
            this.key = key;
            this.payloadOf = payloadOf;
        }

        @Override
        public void open(OpenContext openContext) {
            BenchmarkProgress.functionOpened();
        }

        @Override
        public void processElement(Order order, ReadOnlyContext ctx, Collector<Enriched<Order, P>> out)
                throws Exception {
            out.collect(new Enriched<>(order, LookupKind.EXACT, ctx.getBroadcastState(dimension).get(order.productId),
                    null, null));
        }

        @Override
        public void processBroadcastElement(U update, Context ctx, Collector<Enriched<Order, P>> out)
                throws Exception {
            ctx.getBroadcastState(dimension).put(key.getKey(update), payloadOf.apply(update));
            BenchmarkProgress.updateApplied();
        }
    }

    /**
     * The keyed ceiling: the heap job's topology (sources, key-by exchange, the record path, the sink) with the
     * state taken out. Updates are counted and dropped; every order comes out without a payload.
     */
    static final class KeyedNoState<U, P> extends KeyedCoProcessFunction<Long, U, Order, Enriched<Order, P>> {
        @Override
        public void processElement1(U update, Context ctx, Collector<Enriched<Order, P>> out) {
            BenchmarkProgress.updateApplied();
        }

        @Override
        public void processElement2(Order order, Context ctx, Collector<Enriched<Order, P>> out) {
            out.collect(new Enriched<>(order, LookupKind.EXACT, null, null, null));
        }
    }

    /** The chained ceiling's lookups: every order out without a payload, chained to the order source. */
    static final class AnswerNothing<P> implements MapFunction<Order, Enriched<Order, P>> {
        @Override
        public Enriched<Order, P> map(Order order) {
            return new Enriched<>(order, LookupKind.EXACT, null, null, null);
        }
    }

    /** The chained ceiling's updates: counted on every subtask (they are broadcast) and dropped. */
    static final class DroppingSink<U> implements Sink<U> {
        @Override
        public SinkWriter<U> createWriter(WriterInitContext context) {
            return new SinkWriter<>() {
                @Override
                public void write(U update, Context context) {
                    BenchmarkProgress.updateApplied();
                }

                @Override
                public void flush(boolean endOfInput) {
                }

                @Override
                public void close() {
                }
            };
        }
    }
}
