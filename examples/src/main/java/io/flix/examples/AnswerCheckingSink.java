package io.flix.examples;

import io.flix.examples.EnrichmentBenchmark.SerializableFunction;
import io.flix.flink.Enriched;

import java.util.Objects;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/**
 * The benchmark's sink: counts the enriched orders into {@link BenchmarkProgress} and, where {@code check}, checks
 * each answer against the dimension: the price of the order's product where it is among the {@code keys} loaded,
 * else no payload.
 */
final class AnswerCheckingSink<P> implements Sink<Enriched<Order, P>> {
    private final long keys;
    private final SerializableFunction<P, Long> priceOf;
    private final boolean check;

    AnswerCheckingSink(long keys, SerializableFunction<P, Long> priceOf, boolean check) {
        this.keys = keys;
        this.priceOf = priceOf;
        this.check = check;
    }

    @Override
    public SinkWriter<Enriched<Order, P>> createWriter(WriterInitContext context) {
        return new SinkWriter<>() {
            // counted here and added to the shared counters at flushes: one shared add per record would cost
            // more than some contestants' lookups
            private long enriched;
            private long hits;

            @Override
            public void write(Enriched<Order, P> e, Context context) {
                if (check) {
                    final long ordinal = EnrichmentBenchmark.ordinalOf(e.event.productId);
                    final Long expected = ordinal >= 0 && ordinal < keys ? EnrichmentBenchmark.price(ordinal) : null;
                    final Long answered = e.payload == null ? null : priceOf.apply(e.payload);
                    if (!Objects.equals(expected, answered)) {
                        BenchmarkProgress.answeredWrong(e.event + ": expected price " + expected + ", answered "
                                + answered);
                    }
                }
                enriched++;
                if (e.payload != null) {
                    hits++;
                }
            }

            @Override
            public void flush(boolean endOfInput) {
                publish();
            }

            @Override
            public void close() {
                publish();
            }

            private void publish() {
                BenchmarkProgress.answered(enriched, hits);
                enriched = 0;
                hits = 0;
            }
        };
    }
}
