package io.flix.examples;

import io.flix.flink.Enriched;

import java.io.Serializable;

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
    private final PriceOf<P> priceOf;
    private final boolean check;

    /** The price a payload holds (primitive: the check runs once per order and should allocate nothing). */
    interface PriceOf<P> extends Serializable {
        long price(P payload);
    }

    AnswerCheckingSink(long keys, PriceOf<P> priceOf, boolean check) {
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
                    final boolean known = ordinal >= 0 && ordinal < keys;
                    if (known != (e.payload != null)
                            || known && EnrichmentBenchmark.price(ordinal) != priceOf.price(e.payload)) {
                        BenchmarkProgress.answeredWrong(e.event + ": expected price "
                                + (known ? EnrichmentBenchmark.price(ordinal) : null) + ", answered "
                                + (e.payload == null ? null : priceOf.price(e.payload)));
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
