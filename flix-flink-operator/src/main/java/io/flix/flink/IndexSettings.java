package io.flix.flink;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.GpuMemoryBudget;
import io.flix.index.GpuTuning;

import java.io.Serializable;

/**
 * The index settings that travel with the job graph; each subtask turns them into its own {@link FlixConfig} in
 * {@link #configFor}.
 *
 * @param backend     AUTO, CPU or GPU, as in {@link FlixConfig}
 * @param nodeSize    keys per node
 * @param initialFill fill of a node after build and restructure
 * @param threads     CPU backend threads per subtask; 0 shares the machine's cores among the operator's subtasks on
 *                    it (the operator's parallelism, at most the task manager's slots)
 * @param devices     GPUs to spread the subtasks over; 0 counts the entries of {@code CUDA_VISIBLE_DEVICES} (one
 *                    device where it is unset)
 * @param gpuMemoryBudget the most device memory the GPU indexes of a task manager may hold on one device together:
 *                    the indexes of the keyed mode's subtasks on that device, the shared mode's dimension, the SQL
 *                    connector's tables ({@link GpuMemoryBudget}; {@link GpuMemoryBudget#NONE} by default)
 */
public record IndexSettings(Backend backend, int nodeSize, double initialFill, int threads, int devices,
                            GpuMemoryBudget gpuMemoryBudget)
        implements Serializable {

    public IndexSettings {
        if (threads < 0) {
            throw new IllegalArgumentException("threads must be >= 0, was " + threads);
        }
        if (devices < 0) {
            throw new IllegalArgumentException("devices must be >= 0, was " + devices);
        }
        // the rest is checked by FlixConfig, here rather than on the task manager
        new FlixConfig(backend, nodeSize, initialFill, 1, 0, gpuMemoryBudget, GpuTuning.DEFAULTS);
    }

    /** Settings without a GPU memory budget. */
    public IndexSettings(Backend backend, int nodeSize, double initialFill, int threads, int devices) {
        this(backend, nodeSize, initialFill, threads, devices, GpuMemoryBudget.NONE);
    }

    public static IndexSettings defaults() {
        return new IndexSettings(Backend.AUTO, FlixConfig.DEFAULT_NODE_SIZE, FlixConfig.DEFAULT_INITIAL_FILL, 0, 0,
                GpuMemoryBudget.NONE);
    }

    public IndexSettings withBackend(Backend b) {
        return new IndexSettings(b, nodeSize, initialFill, threads, devices, gpuMemoryBudget);
    }

    public IndexSettings withThreads(int t) {
        return new IndexSettings(backend, nodeSize, initialFill, t, devices, gpuMemoryBudget);
    }

    public IndexSettings withDevices(int d) {
        return new IndexSettings(backend, nodeSize, initialFill, threads, d, gpuMemoryBudget);
    }

    public IndexSettings withGpuMemoryBudget(GpuMemoryBudget budget) {
        return new IndexSettings(backend, nodeSize, initialFill, threads, devices, budget);
    }

    /**
     * The config of one subtask: its device is its index modulo the devices, its threads a share of the cores.
     *
     * @param subtaskIndex  the subtask's index
     * @param sharingCores  subtasks of this operator that run on this machine
     */
    public FlixConfig configFor(int subtaskIndex, int sharingCores) {
        return configFor(subtaskIndex, sharingCores, System.getenv("CUDA_VISIBLE_DEVICES"));
    }

    /**
     * As {@link #configFor(int, int)}, with the value of {@code CUDA_VISIBLE_DEVICES} given. CUDA numbers the
     * visible devices 0, 1, ... in the order listed, whatever their physical ids: those are the ordinals used.
     */
    FlixConfig configFor(int subtaskIndex, int sharingCores, String cudaVisibleDevices) {
        final int cores = Runtime.getRuntime().availableProcessors();
        final int subtaskThreads = threads > 0 ? threads : Math.max(1, cores / Math.max(1, sharingCores));
        final int deviceCount = devices > 0 ? devices : visibleDevices(cudaVisibleDevices);
        return new FlixConfig(backend, nodeSize, initialFill, subtaskThreads, subtaskIndex % deviceCount,
                gpuMemoryBudget, GpuTuning.DEFAULTS);
    }

    /** Number of devices a {@code CUDA_VISIBLE_DEVICES} value lists; 1 where unset or empty. */
    static int visibleDevices(String cudaVisibleDevices) {
        if (cudaVisibleDevices == null || cudaVisibleDevices.isBlank()) {
            return 1;
        }
        int count = 0;
        for (String part : cudaVisibleDevices.split(",")) {
            if (!part.isBlank()) {
                count++;
            }
        }
        return Math.max(1, count);
    }
}
