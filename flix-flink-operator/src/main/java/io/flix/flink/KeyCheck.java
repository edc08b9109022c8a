package io.flix.flink;

import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Runs before the key-by: a record whose key is null (or whose key function throws) cannot be keyed, so it goes to
 * {@link FlixEnrichment#REJECTED} here instead of failing the job in the partitioner.
 */
final class KeyCheck<T> extends ProcessFunction<T, T> {

    private static final long serialVersionUID = 1L;

    private final KeySelector<T, Long> key;
    private final String input;

    KeyCheck(KeySelector<T, Long> key, String input) {
        this.key = key;
        this.input = input;
    }

    @Override
    public void processElement(T value, Context context, Collector<T> out) {
        final Long k;
        try {
            k = key.getKey(value);
        } catch (Exception e) {
            context.output(FlixEnrichment.REJECTED, new Rejected(input, "the key function failed: " + e, value));
            return;
        }
        if (k == null) {
            context.output(FlixEnrichment.REJECTED, new Rejected(input, "the key is null", value));
            return;
        }
        out.collect(value);
    }
}
