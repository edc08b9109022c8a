package io.flix.flink.keyed;

import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Update;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.runtime.metrics.util.InterceptingOperatorMetricGroup;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FlixEnrichmentMetricsTest {

    @Test
    void metricsFollowTheFlushes() throws Exception {
        final FlixEnrichmentOperator<Update, Lookup, String> operator = Harnesses.operator(LookupKind.EXACT, 4, 0);
        try (var harness = Harnesses.harness(operator, 1, 0)) {
            harness.open();
            final InterceptingOperatorMetricGroup group = new InterceptingOperatorMetricGroup();
            operator.registerMetrics(group);
            for (long k = 0; k < 10; k++) {
                harness.processElement1(new StreamRecord<>(Update.upsert(k, "v" + k)));
            }
            harness.processElement1(new StreamRecord<>(Update.delete(3)));
            harness.processElement2(new StreamRecord<>(new Lookup(0, 3, 3)));
            harness.prepareSnapshotPreBarrier(1);

            final Histogram batchSizes = (Histogram) group.get("flixBatchSize");
            assertEquals(3, batchSizes.getCount(), "flushes of 4, 4 and 4 records");
            assertEquals(4, batchSizes.getStatistics().getMax());
            assertEquals(3, ((Histogram) group.get("flixFlushLatencyNanos")).getCount());
            assertTrue(((Histogram) group.get("flixFlushLatencyNanos")).getStatistics().getMin() > 0);
            assertEquals(9L, ((Gauge<?>) group.get("flixIndexSize")).getValue());
            assertTrue((Long) ((Gauge<?>) group.get("flixIndexBytes")).getValue() > 0);
            assertTrue((Long) ((Gauge<?>) group.get("flixRowBytes")).getValue() > 0);
            assertEquals("cpu", ((Gauge<?>) group.get("flixBackend")).getValue());
            assertEquals(1, ((Counter) group.get("flixLookups")).getCount());
            assertEquals(11, ((Counter) group.get("flixUpdates")).getCount());
            assertEquals(3, ((Counter) group.get("flixFlushes")).getCount());
            assertEquals(0, ((Counter) group.get("flixRejected")).getCount());
        }
    }
}
