package io.flix.flink;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.GpuMemoryBudget;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class IndexSettingsTest {

    @Test
    void subtasksAreSpreadOverTheDevicesByIndex() {
        final IndexSettings settings = IndexSettings.defaults().withBackend(Backend.GPU).withDevices(3);
        for (int subtask = 0; subtask < 8; subtask++) {
            final FlixConfig config = settings.configFor(subtask, 8, 4);
            assertEquals(subtask % 3, config.device());
            assertEquals(Backend.GPU, config.backend());
        }
    }

    @Test
    void withoutADeviceCountTheSubtasksSpreadOverEveryDeviceTheTaskManagerSees() {
        final IndexSettings settings = IndexSettings.defaults().withBackend(Backend.GPU);
        final int subtasks = 7;
        for (int visible = 1; visible <= 4; visible++) {
            final int[] perDevice = new int[visible];
            for (int subtask = 0; subtask < subtasks; subtask++) {
                final int device = settings.configFor(subtask, subtasks, visible).device();
                assertEquals(subtask % visible, device, visible + " devices seen");
                perDevice[device]++;
            }
            for (int count : perDevice) {
                // every device is used, none takes more than its share rounded up
                assertTrue(count >= subtasks / visible && count <= (subtasks + visible - 1) / visible,
                        visible + " devices seen: " + java.util.Arrays.toString(perDevice));
            }
            assertEquals(visible, settings.deviceCount(visible));
        }
        for (int subtask = 0; subtask < subtasks; subtask++) {
            assertEquals(0, settings.configFor(subtask, subtasks, 0).device(), "no device seen: device 0");
            // an explicit count wins over the devices seen
            assertEquals(subtask % 2, settings.withDevices(2).configFor(subtask, subtasks, 4).device());
        }
    }

    @Test
    void moreDevicesThanTheTaskManagerSeesAreRefused() {
        final IndexSettings three = IndexSettings.defaults().withBackend(Backend.GPU).withDevices(3);
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> three.configFor(0, 1, 2));
        assertTrue(e.getMessage().startsWith("devices is 3, but this task manager sees 2 CUDA device(s)"),
                e::getMessage);
        assertTrue(e.getMessage().endsWith("set devices to at most 2, or to 0 for every device it sees"),
                e::getMessage);
        assertThrows(IllegalArgumentException.class, () -> three.withBackend(Backend.AUTO).deviceCount(2));
        assertEquals(3, three.deviceCount(3));
        // where no GPU is usable the index goes to the CPU (AUTO) or fails to open with that reason (GPU)
        assertEquals(3, three.deviceCount(0));
    }

    @Test
    void onTheCpuTheDevicesAreNeverCheckedNorCounted() {
        final IndexSettings cpu = IndexSettings.defaults().withBackend(Backend.CPU);
        assertEquals(0, Backend.CPU.devices());
        assertEquals(1, cpu.deviceCount());
        assertEquals(64, cpu.withDevices(64).deviceCount(), "an explicit count is not checked on the CPU");
        assertEquals(0, cpu.configFor(5, 8).device());
    }

    @Test
    void threadsAreSetOrSharedAmongTheSubtasks() {
        assertEquals(5, IndexSettings.defaults().withThreads(5).configFor(0, 4).threads());
        final int cores = Runtime.getRuntime().availableProcessors();
        assertEquals(Math.max(1, cores / 2), IndexSettings.defaults().configFor(1, 2).threads());
        assertEquals(1, IndexSettings.defaults().configFor(0, 4 * cores).threads());
    }

    @Test
    void anIndexOfSeveralReadersUpdatesOnEveryCoreAndLooksUpOnEachReadersShare() {
        final int cores = Runtime.getRuntime().availableProcessors();
        final FlixConfig shared = IndexSettings.defaults().configForReaders(0, 2);
        assertEquals(cores, shared.threads(), "updates run alone: every core");
        assertEquals(Math.max(1, cores / 2), shared.lookupThreadCap(), "two readers: half the cores a call");
        assertEquals(1, IndexSettings.defaults().configForReaders(0, 4 * cores).lookupThreadCap());
        assertEquals(cores, IndexSettings.defaults().configForReaders(0, 1).lookupThreadCap());
        final FlixConfig set = IndexSettings.defaults().withThreads(3).configForReaders(0, 16);
        assertEquals(3, set.threads(), "threads set: for updates");
        assertEquals(3, set.lookupThreadCap(), "and for each lookup call");
        assertEquals(IndexSettings.shardsFor(cores), shared.shards());
        assertEquals(1, set.shards(), "3 update threads: one index");
        assertEquals(256, IndexSettings.defaults().withThreads(16).configForReaders(0, 16).shards(),
                "16 update threads: sixteen key-range shards each");
        assertEquals(IndexSettings.LOAD_BATCH_MAX_SHARDED,
                IndexSettings.defaults().withThreads(16).loadBatchMax(Backend.CPU));
        assertEquals(IndexSettings.LOAD_BATCH_MAX, IndexSettings.defaults().withThreads(16).loadBatchMax(Backend.GPU),
                "the GPU's batches as measured there");
        assertEquals(IndexSettings.LOAD_BATCH_MAX, IndexSettings.defaults()
                .withThreads(IndexSettings.SHARDED_MIN_THREADS - 1).loadBatchMax(Backend.CPU), "an index of one shard");
        assertEquals(cores >= IndexSettings.SHARDED_MIN_THREADS ? IndexSettings.LOAD_BATCH_MAX_SHARDED
                : IndexSettings.LOAD_BATCH_MAX, IndexSettings.defaults().loadBatchMax(Backend.CPU),
                "threads unset: the cores");
        assertEquals(IndexSettings.SHARDS_PER_THREAD * IndexSettings.SHARDED_MIN_THREADS, IndexSettings.defaults()
                .withThreads(IndexSettings.SHARDED_MIN_THREADS).configForReaders(0, 2).shards());
        assertEquals(1, IndexSettings.defaults().withThreads(IndexSettings.SHARDED_MIN_THREADS - 1)
                .configForReaders(0, 2).shards(), "below the threshold: one index");
        assertEquals(FlixConfig.MAX_SHARDS, IndexSettings.defaults().withThreads(FlixConfig.MAX_SHARDS)
                .configForReaders(0, 2).shards(), "no more shards than an index may have");
        assertEquals(1, IndexSettings.defaults().withThreads(16).configFor(0, 1).shards(),
                "a keyed subtask's index is one");
        assertEquals(1, IndexSettings.defaults().withBackend(Backend.GPU).withDevices(2).configForReaders(1, 2)
                .device());
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
        // two devices seen, as asked: the test holds on a machine with any number of GPUs
        for (int subtask = 0; subtask < 4; subtask++) {
            assertEquals(budget, settings.configFor(subtask, 4, 2).gpuMemoryBudget());
        }
        assertThrows(IllegalArgumentException.class, () -> IndexSettings.defaults().withGpuMemoryBudget(null));
    }

    @Test
    void theExactKeyTableSwitchReachesEveryConfigAndIsKeptByTheOtherSettings() {
        assertTrue(IndexSettings.defaults().configFor(0, 1).exactKeyTable(), "kept by default");
        final IndexSettings without = IndexSettings.defaults().withExactKeyTable(false).withThreads(2).withDevices(1)
                .withBackend(Backend.CPU).withGpuMemoryBudget(GpuMemoryBudget.NONE);
        assertFalse(without.exactKeyTable());
        assertFalse(without.configFor(0, 2).exactKeyTable());
        assertFalse(without.configForReaders(0, 2).exactKeyTable());
        assertTrue(without.withExactKeyTable(true).configForReaders(0, 2).exactKeyTable());
    }
}
