package io.flix.flink;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.GpuMemoryBudget;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IndexSettingsTest {

    @Test
    void subtasksAreSpreadOverTheDevicesByIndex() {
        final IndexSettings settings = IndexSettings.defaults().withBackend(Backend.GPU).withDevices(3);
        for (int subtask = 0; subtask < 8; subtask++) {
            final FlixConfig config = settings.configFor(subtask, 8);
            assertEquals(subtask % 3, config.device());
            assertEquals(Backend.GPU, config.backend());
        }
    }

    @Test
    void withoutADeviceCountTheSubtasksSpreadOverTheVisibleDevices() {
        final IndexSettings settings = IndexSettings.defaults().withBackend(Backend.GPU);
        final int subtasks = 7;
        for (String visible : new String[] {"0,1", "4,5,6", "GPU-8a1b,GPU-77ff,GPU-0c3d,GPU-1e2f", "3"}) {
            final int deviceCount = visible.split(",").length;
            final int[] perDevice = new int[deviceCount];
            for (int subtask = 0; subtask < subtasks; subtask++) {
                final int device = settings.configFor(subtask, subtasks, visible).device();
                // CUDA renumbers the visible devices from 0, whatever ids the variable lists
                assertTrue(device >= 0 && device < deviceCount, visible + ": device " + device);
                assertEquals(subtask % deviceCount, device, visible);
                perDevice[device]++;
            }
            for (int count : perDevice) {
                // every visible device is used, none takes more than its share rounded up
                assertTrue(count >= subtasks / deviceCount && count <= (subtasks + deviceCount - 1) / deviceCount,
                        visible + ": " + java.util.Arrays.toString(perDevice));
            }
        }
        for (int subtask = 0; subtask < subtasks; subtask++) {
            assertEquals(0, settings.configFor(subtask, subtasks, null).device(), "unset: device 0");
            assertEquals(0, settings.configFor(subtask, subtasks, "").device(), "empty: device 0");
            // an explicit count wins over the variable
            assertEquals(subtask % 2, settings.withDevices(2).configFor(subtask, subtasks, "0,1,2,3").device());
        }
    }

    @Test
    void visibleDevicesAreCountedFromTheEnvironmentValue() {
        assertEquals(1, IndexSettings.visibleDevices(null));
        assertEquals(1, IndexSettings.visibleDevices(""));
        assertEquals(1, IndexSettings.visibleDevices("3"));
        assertEquals(4, IndexSettings.visibleDevices("0,1,2,3"));
        assertEquals(2, IndexSettings.visibleDevices("GPU-8a1b,GPU-77ff"));
    }

    @Test
    void threadsAreSetOrSharedAmongTheSubtasks() {
        assertEquals(5, IndexSettings.defaults().withThreads(5).configFor(0, 4).threads());
        final int cores = Runtime.getRuntime().availableProcessors();
        assertEquals(Math.max(1, cores / 2), IndexSettings.defaults().configFor(1, 2).threads());
        assertEquals(1, IndexSettings.defaults().configFor(0, 4 * cores).threads());
    }

    @Test
    void badSettingsFailWhereTheJobIsBuilt() {
        assertThrows(IllegalArgumentException.class, () -> IndexSettings.defaults().withThreads(-1));
        assertThrows(IllegalArgumentException.class, () -> IndexSettings.defaults().withDevices(-1));
        assertThrows(IllegalArgumentException.class, () -> IndexSettings.defaults().withBackend(null));
        assertThrows(IllegalArgumentException.class,
                () -> new IndexSettings(Backend.CPU, 33, 0.5, 0, 0));
    }

    @Test
    void theGpuMemoryBudgetReachesEverySubtasksConfig() {
        assertEquals(GpuMemoryBudget.NONE, IndexSettings.defaults().configFor(0, 1).gpuMemoryBudget(),
                "none by default");
        final GpuMemoryBudget budget = GpuMemoryBudget.parse("80%");
        final IndexSettings settings = IndexSettings.defaults().withBackend(Backend.GPU).withGpuMemoryBudget(budget)
                .withDevices(2).withThreads(3).withBackend(Backend.AUTO);
        assertEquals(budget, settings.gpuMemoryBudget(), "kept by the other with methods");
        for (int subtask = 0; subtask < 4; subtask++) {
            assertEquals(budget, settings.configFor(subtask, 4).gpuMemoryBudget());
        }
        assertThrows(IllegalArgumentException.class, () -> IndexSettings.defaults().withGpuMemoryBudget(null));
    }
}
