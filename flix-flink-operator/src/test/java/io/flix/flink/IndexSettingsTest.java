package io.flix.flink;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
}
