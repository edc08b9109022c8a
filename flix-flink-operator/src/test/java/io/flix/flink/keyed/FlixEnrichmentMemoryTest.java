package io.flix.flink.keyed;

import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.Update;
import io.flix.flink.payload.RowStore;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The operator's payload memory follows the dimension as its payloads change size and as it empties. */
class FlixEnrichmentMemoryTest {

    private static final int KEYS = 50_000;

    @Test
    void payloadMemoryFollowsTheLiveDimension() throws Exception {
        final FlixEnrichmentOperator<Update, Lookup, String> operator = Harnesses.operator(LookupKind.EXACT, 1000, 0);
        try (var harness = Harnesses.harness(operator, 1, 0)) {
            harness.open();
            final long empty = operator.payloadHeapBytes();
            for (int size : new int[] {100, 300, 1000, 100}) {
                final String filler = "x".repeat(size - 6);
                for (int key = 0; key < KEYS; key++) {
                    harness.processElement1(new StreamRecord<>(Update.upsert(key, String.format("%06d", key)
                            + filler)));
                }
                harness.prepareSnapshotPreBarrier(size);
            }
            assertEquals(KEYS, operator.liveRows());
            // 50,000 payloads of 101 serialized bytes, in 104-byte slots: 5.2 MB live
            final long live = KEYS * 104L;
            assertTrue(operator.payloadHeapBytes() <= 2 * live + 4L * RowStore.SLAB_BYTES,
                    operator.payloadHeapBytes() + " bytes held for " + live + " live");

            harness.processElement2(new StreamRecord<>(new Lookup(0, 123, 123)));
            harness.prepareSnapshotPreBarrier(10_000);
            assertEquals(String.format("%06d", 123) + "x".repeat(94), harness.extractOutputValues().get(0).payload);

            for (int key = 0; key < KEYS; key++) {
                harness.processElement1(new StreamRecord<>(Update.delete(key)));
            }
            harness.prepareSnapshotPreBarrier(10_001);
            assertEquals(0, operator.indexSize());
            assertEquals(empty + RowStore.SLAB_BYTES, operator.payloadHeapBytes(),
                    "an empty dimension holds an empty store's arrays and one slab for the next rows");
        }
    }
}
