package io.flix.flink.dimension;

import io.flix.flink.IndexSettings;
import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.MirroredIndex;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which index a dimension held once per task manager opens: one replica per GPU, or one index. The devices the task
 * manager sees are given (four), so that the test means the same on any machine.
 */
class DimensionIndexTest {

    /** CUDA devices the task manager sees in these tests. */
    private static final int SEEN = 4;

    private final List<FlixConfig> asked = new ArrayList<>();
    private final List<FlixIndex> opened = new ArrayList<>();

    private FlixIndex openFakeGpu(FlixConfig config) {
        asked.add(config);
        final FlixIndex index = new FakeGpuReplica(config.device());
        opened.add(index);
        return index;
    }

    @Test
    void onTheGpuWithTwoDevicesEachDeviceHoldsAReplica() {
        final IndexSettings settings = IndexSettings.defaults().withBackend(Backend.GPU).withDevices(2);
        try (FlixIndex index = DimensionIndex.open(settings, 1, this::openFakeGpu, SEEN)) {
            final MirroredIndex mirror = assertInstanceOf(MirroredIndex.class, index);
            assertEquals(List.of(0, 1), mirror.devices());
            assertEquals(List.of(0, 1), asked.stream().map(FlixConfig::device).toList());
            assertEquals(opened, mirror.replicas());
            assertEquals("0,1", DimensionIndex.describe(mirror.devices()));
        }
    }

    @Test
    void everyReplicaLooksUpOnTheShareOfTheCoresOfItsReaders() {
        final int cores = Runtime.getRuntime().availableProcessors();
        final IndexSettings settings = IndexSettings.defaults().withBackend(Backend.GPU).withDevices(2);
        try (FlixIndex index = DimensionIndex.open(settings, 2, this::openFakeGpu, SEEN)) {
            assertEquals(2, asked.size());
            for (FlixConfig config : asked) {
                assertEquals(cores, config.threads());
                assertEquals(Math.max(1, cores / 2), config.lookupThreadCap());
            }
        }
    }

    @Test
    void oneDeviceOrTheCpuHoldsOneIndex() {
        try (FlixIndex index = DimensionIndex.open(IndexSettings.defaults().withBackend(Backend.GPU).withDevices(1),
                1, this::openFakeGpu, SEEN)) {
            assertSame(opened.get(0), index);
        }
        asked.clear();
        final FlixIndex cpu = FlixIndex.open(FlixConfig.builder().backend(Backend.CPU).threads(1).build());
        try (FlixIndex index = DimensionIndex.open(IndexSettings.defaults().withDevices(2), 1, config -> {
            asked.add(config);
            return cpu;
        }, SEEN)) {
            assertSame(cpu, index, "AUTO on the CPU: one index, whatever the devices");
            assertEquals(1, asked.size(), "no replica is opened off the GPU");
            assertEquals("-1", DimensionIndex.describe(List.of(index.device())));
        }
    }

    @Test
    void everyDeviceSeenByDefaultAndNoMoreThanThat() {
        final IndexSettings everyDevice = IndexSettings.defaults().withBackend(Backend.GPU);
        try (FlixIndex index = DimensionIndex.open(everyDevice, 1, this::openFakeGpu, SEEN)) {
            assertEquals(List.of(0, 1, 2, 3), ((MirroredIndex) index).devices());
        }
        opened.clear();
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> DimensionIndex.open(everyDevice.withDevices(5), 1, this::openFakeGpu, SEEN));
        assertTrue(e.getMessage().startsWith("devices is 5, but this task manager sees 4 CUDA device(s)"),
                e::getMessage);
        assertTrue(opened.isEmpty(), "an index was opened before the device count was checked");
    }

    @Test
    void aReplicaFailingToOpenClosesThoseOpened() {
        final IndexSettings settings = IndexSettings.defaults().withBackend(Backend.GPU).withDevices(3);
        final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> DimensionIndex.open(settings, 1, config -> {
                    if (config.device() == 2) {
                        throw new IllegalStateException("out of memory on device 2");
                    }
                    return openFakeGpu(config);
                }, SEEN));
        assertEquals("out of memory on device 2", e.getMessage());
        assertEquals(2, opened.size());
        for (FlixIndex index : opened) {
            assertThrows(IllegalStateException.class, index::size, "a replica opened was left open");
        }
        assertFalse(opened.isEmpty());
        assertTrue(asked.stream().allMatch(c -> c.backend() == Backend.GPU));
    }

    @Test
    void onTheGpusFlinkAssignedAReplicaOnEachAndNoOther() {
        final IndexSettings settings = IndexSettings.defaults().withBackend(Backend.GPU);
        try (FlixIndex index = DimensionIndex.open(settings, 1, this::openFakeGpu, List.of(3, 1))) {
            assertEquals(List.of(3, 1), ((MirroredIndex) index).devices());
            assertEquals(List.of(3, 1), asked.stream().map(FlixConfig::device).toList());
        }
    }
}
