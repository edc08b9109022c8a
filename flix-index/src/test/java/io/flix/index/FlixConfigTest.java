package io.flix.index;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The cap on a lookup call's threads (its default, its bound and its check), the exact-key table's switch and the
 * CPU backend's key-range shards.
 */
class FlixConfigTest {

    @Test
    void aLookupCallUsesEveryThreadUnlessCapped() {
        final FlixConfig config = FlixConfig.builder().threads(6).build();
        assertEquals(0, config.lookupThreads());
        assertEquals(6, config.lookupThreadCap());
        assertEquals(2, config.withLookupThreads(2).lookupThreadCap());
        assertEquals(6, config.withLookupThreads(64).lookupThreadCap(), "never more than the index's threads");
        assertEquals(1, FlixConfig.builder().threads(6).lookupThreads(1).build().lookupThreadCap());
        assertEquals(0, new FlixConfig(Backend.CPU, 32, 0.5, 3, 0).lookupThreads());
    }

    @Test
    void cappingKeepsTheOtherSettings() {
        final FlixConfig config = FlixConfig.builder().backend(Backend.CPU).nodeSize(16).initialFill(0.75)
                .threads(5).device(2).gpuMemoryBudget(GpuMemoryBudget.ofFraction(0.5)).build();
        final FlixConfig capped = config.withLookupThreads(1);
        assertEquals(new FlixConfig(Backend.CPU, 16, 0.75, 5, 2, GpuMemoryBudget.ofFraction(0.5),
                GpuTuning.DEFAULTS, 1, true), capped);
        assertEquals(1, capped.withGpuMemoryBudget(GpuMemoryBudget.NONE).lookupThreads());
        assertEquals(1, capped.withGpuTuning(GpuTuning.DEFAULTS).lookupThreads());
    }

    @Test
    void aNegativeCapIsRefusedByName() {
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> FlixConfig.builder().lookupThreads(-1).build());
        assertTrue(e.getMessage().contains("lookupThreads"), e.getMessage());
    }

    @Test
    void theExactKeyTableIsKeptUnlessLeftOut() {
        assertTrue(FlixConfig.builder().build().exactKeyTable());
        assertTrue(new FlixConfig(Backend.CPU, 32, 0.5, 3, 0).exactKeyTable());
        final FlixConfig without = FlixConfig.builder().threads(4).lookupThreads(2).exactKeyTable(false).build();
        assertEquals(false, without.exactKeyTable());
        assertEquals(false, without.withLookupThreads(1).withGpuTuning(GpuTuning.DEFAULTS)
                .withGpuMemoryBudget(GpuMemoryBudget.NONE).exactKeyTable(), "the other settings' withers keep it");
        assertEquals(2, without.withExactKeyTable(true).lookupThreads());
        assertTrue(without.withExactKeyTable(true).exactKeyTable());
    }

    @Test
    void oneIndexUnlessShardsAreAskedAndAShardCountOutOfRangeIsRefusedByName() {
        assertEquals(1, FlixConfig.builder().build().shards());
        assertEquals(1, new FlixConfig(Backend.CPU, 32, 0.5, 3, 0).shards());
        final FlixConfig sharded = FlixConfig.builder().threads(4).shards(4).exactKeyTable(false).build();
        assertEquals(4, sharded.withLookupThreads(1).withExactKeyTable(true).shards(), "the other withers keep it");
        assertEquals(2, sharded.withShards(2).shards());
        for (int bad : new int[] {0, FlixConfig.MAX_SHARDS + 1}) {
            final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> FlixConfig.builder().shards(bad).build());
            assertTrue(e.getMessage().contains("shards"), e.getMessage());
        }
    }
}
