package io.flix.flink;

import io.flix.index.GpuMemoryBudget;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The builder's GPU memory budget reaches the index settings of both modes, and through them each index's config. */
class FlixEnrichmentGpuMemoryBudgetTest {

    @Test
    void theBudgetReachesTheIndexConfigInBothModes() {
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        final DataStream<Update> updates = env.fromData(new Update(1, "a"));
        final DataStream<Long> lookups = env.fromData(1L);
        final GpuMemoryBudget budget = GpuMemoryBudget.parse("40gb");
        final FlixEnrichment<Update, Long, Update> keyed = FlixEnrichment.of(updates, lookups);
        assertEquals(GpuMemoryBudget.NONE, keyed.indexSettings().gpuMemoryBudget(), "none by default");
        keyed.gpuMemoryBudget(budget).threads(2);
        final FlixEnrichment<Update, Long, String> keyedPayload = keyed.payload(u -> u.payload, Types.STRING);
        assertEquals(budget, keyedPayload.indexSettings().gpuMemoryBudget(), "kept when the payload changes");
        assertEquals(budget, keyedPayload.indexSettings().configFor(3, 4).gpuMemoryBudget());
        final FlixEnrichment<Update, Long, Update> shared = FlixEnrichment.shared(updates, lookups)
                .gpuMemoryBudget(GpuMemoryBudget.ofFraction(0.5));
        assertEquals(GpuMemoryBudget.ofFraction(0.5), shared.indexSettings().configFor(0, 1).gpuMemoryBudget());
    }

    @Test
    void aNullBudgetIsRefusedWhereTheJobIsBuilt() {
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        final FlixEnrichment<Long, Long, Long> enrichment = FlixEnrichment.of(env.fromData(1L), env.fromData(1L));
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> enrichment.gpuMemoryBudget(null));
        assertTrue(e.getMessage().contains("gpuMemoryBudget"), e.getMessage());
    }
}
