package io.flix.flink.keyed;

import io.flix.flink.Enriched;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Match;
import io.flix.flink.Update;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.Collector;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** What Flink users write today, one record at a time: the references the FliX operator must equal. */
final class ReferenceOperators {

    private ReferenceOperators() {
    }

    /** Exact lookups on keyed ValueState. */
    static final class ValueStateEnrichment extends KeyedCoProcessFunction<Long, Update, Lookup, Enriched<Lookup, String>> {
        private transient ValueState<String> payload;

        @Override
        public void open(OpenContext openContext) {
            payload = getRuntimeContext().getState(new ValueStateDescriptor<>("payload", Types.STRING));
        }

        @Override
        public void processElement1(Update update, Context ctx, Collector<Enriched<Lookup, String>> out)
                throws Exception {
            if (update.payload == null) {
                payload.clear();
            } else {
                payload.update(update.payload);
            }
        }

        @Override
        public void processElement2(Lookup lookup, Context ctx, Collector<Enriched<Lookup, String>> out)
                throws Exception {
            out.collect(new Enriched<>(lookup, LookupKind.EXACT, payload.value(), null, null));
        }
    }

    /**
     * Every lookup kind on one TreeMap per subtask, one record at a time: the sequential meaning of the ordered
     * kinds within a subtask's keys.
     */
    static final class TreeMapEnrichment extends AbstractStreamOperator<Enriched<Lookup, String>>
            implements TwoInputStreamOperator<Update, Lookup, Enriched<Lookup, String>> {
        private final LookupKind kind;
        private final int limit;
        private transient TreeMap<Long, String> map;

        TreeMapEnrichment(LookupKind kind, int limit) {
            this.kind = kind;
            this.limit = limit;
        }

        @Override
        public void open() throws Exception {
            super.open();
            map = new TreeMap<>();
        }

        @Override
        public void processElement1(StreamRecord<Update> element) {
            final Update u = element.getValue();
            if (u.payload == null) {
                map.remove(u.key);
            } else {
                map.put(u.key, u.payload);
            }
        }

        @Override
        public void processElement2(StreamRecord<Lookup> element) {
            final Lookup l = element.getValue();
            final Enriched<Lookup, String> result = switch (kind) {
                case EXACT -> new Enriched<>(l, kind, map.get(l.key), null, null);
                case FLOOR -> found(l, map.floorEntry(l.key));
                case CEILING -> found(l, map.ceilingEntry(l.key));
                case RANGE -> {
                    final List<Match<String>> matches = new ArrayList<>();
                    for (Map.Entry<Long, String> e : map.subMap(l.key, true, l.hi, true).entrySet()) {
                        if (matches.size() == limit) {
                            break;
                        }
                        matches.add(new Match<>(e.getKey(), e.getValue()));
                    }
                    yield new Enriched<>(l, kind, null, null, matches);
                }
            };
            output.collect(element.hasTimestamp()
                    ? new StreamRecord<>(result, element.getTimestamp()) : new StreamRecord<>(result));
        }

        private Enriched<Lookup, String> found(Lookup l, Map.Entry<Long, String> e) {
            return e == null ? new Enriched<>(l, kind, null, null, null)
                    : new Enriched<>(l, kind, e.getValue(), e.getKey(), null);
        }
    }
}
