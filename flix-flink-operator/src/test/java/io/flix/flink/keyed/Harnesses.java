package io.flix.flink.keyed;

import io.flix.flink.FlixEnrichment;
import io.flix.flink.FlushPolicy;
import io.flix.flink.IndexSettings;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Update;
import io.flix.index.Backend;

import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;

/** Operators and keyed harnesses over the test records {@link Update} and {@link Lookup}. */
final class Harnesses {

    static final int MAX_PARALLELISM = 128;
    static final int RANGE_LIMIT = 3;
    static final TypeSerializer<Lookup> LOOKUP_SERIALIZER =
            TypeInformation.of(Lookup.class).createSerializer(new SerializerConfigImpl());

    private Harnesses() {
    }

    /** An operator of the {@link FlushPolicy#TIMER} policy. */
    static FlixEnrichmentOperator<Update, Lookup, String> operator(LookupKind kind, int batchSize,
                                                                  long flushIntervalMillis) {
        return operator(kind, batchSize, flushIntervalMillis, FlushPolicy.TIMER);
    }

    static FlixEnrichmentOperator<Update, Lookup, String> operator(LookupKind kind, int batchSize,
                                                                  long flushIntervalMillis, FlushPolicy policy) {
        return new FlixEnrichmentOperator<>(u -> u.payload, StringSerializer.INSTANCE, LOOKUP_SERIALIZER, kind,
                l -> l.hi, RANGE_LIMIT, batchSize, flushIntervalMillis, policy,
                IndexSettings.defaults().withBackend(Backend.CPU).withThreads(2), FlixEnrichment.REJECTED);
    }


    static <OUT> KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, OUT> harness(
            TwoInputStreamOperator<Update, Lookup, OUT> operator, int parallelism, int subtask) throws Exception {
        return new KeyedTwoInputStreamOperatorTestHarness<>(operator, u -> u.key, l -> l.key, Types.LONG,
                MAX_PARALLELISM, parallelism, subtask);
    }

    /** The subtask that owns a key at a parallelism. */
    static int subtaskOf(long key, int parallelism) {
        return KeyGroupRangeAssignment.assignKeyToParallelOperator(key, MAX_PARALLELISM, parallelism);
    }
}
