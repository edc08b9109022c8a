package io.flix.flink;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.GpuMemoryBudget;
import io.flix.index.GpuTuning;

import java.io.Serializable;
import java.util.List;
import java.util.stream.IntStream;

/**
 * The index settings that travel with the job graph; each subtask turns them into its own {@link FlixConfig} in
 * {@link #configFor}.
 *
 * @param backend     AUTO, CPU or GPU, as in {@link FlixConfig}
 * @param nodeSize    keys per node
 * @param initialFill fill of a node after build and restructure
 * @param threads     CPU backend threads per subtask; 0 shares the machine's cores among the operator's subtasks on
 *                    it (the operator's parallelism, at most the task manager's slots). An index held once per task
 *                    manager updates on these threads (0: every core) and looks up on them (0: cores / its readers,
 *                    {@link #configForReaders})
 * @param devices     GPUs of a task manager to use: the keyed mode spreads its subtasks over them, the shared mode
 *                    holds a replica of the dimension on each; 0 takes every CUDA device the task manager sees (the
 *                    CUDA driver's count, which {@code CUDA_VISIBLE_DEVICES} sets). More than it sees is an error
 *                    where the index goes to the GPU ({@link #deviceCount()})
 * @param gpuMemoryBudget the most device memory the GPU indexes of a task manager may hold on one device together:
 *                    the indexes of the keyed mode's subtasks on that device, the shared mode's dimension (each
 *                    replica), the SQL connector's tables ({@link GpuMemoryBudget}; {@link GpuMemoryBudget#NONE} by
 *                    default)
 * @param exactKeyTable CPU backend: keep every key with its value in a hash table beside the nodes, for exact
 *                    lookups at about one cache line a key, at 16 to 32 more heap bytes a key (default: kept;
 *                    {@link FlixConfig#exactKeyTable()})
 */
public record IndexSettings(Backend backend, int nodeSize, double initialFill, int threads, int devices,
                            GpuMemoryBudget gpuMemoryBudget, boolean exactKeyTable)
        implements Serializable {

    /**
     * Fewest update threads of an index held once per task manager that are cut into key-range shards. On few cores
     * their gain on random keys does not outweigh their loss on ascending keys appended at the top, where each growth
     * by half cuts the ranges anew (docs/results/shared-cpu-shards-per-thread-2026-11-29.md).
     */
    static final int SHARDED_MIN_THREADS = 8;

    /**
     * Key-range shards per update thread: more shards than threads let a thread that finished its shards take
     * another's, and each shard's part of a batch is sorted and merged in less memory; sixteen loaded faster than four
     * (random and ascending keys), at nine tenths of their floors and ceilings
     * (docs/results/shared-load-batch-max-2026-11-29.md).
     */
    static final int SHARDS_PER_THREAD = 16;

    /**
     * Most updates of one batch of a dimension held once per task manager under a load, where the job sets none
     * ({@link #loadBatchMax}): on the GPU, or on a CPU index of one shard.
     */
    static final int LOAD_BATCH_MAX = 1 << 21;
    /**
     * As {@link #LOAD_BATCH_MAX}, on a CPU index cut into key-range shards: each shard takes its part of the batch, so
     * a larger batch puts more keys into each node a shard merges (docs/results/shared-load-batch-max-2026-11-29.md).
     */
    static final int LOAD_BATCH_MAX_SHARDED = 1 << 22;

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

    /** Settings without a GPU memory budget, with the CPU backend's exact-key table. */
    public IndexSettings(Backend backend, int nodeSize, double initialFill, int threads, int devices) {
        this(backend, nodeSize, initialFill, threads, devices, GpuMemoryBudget.NONE, true);
    }

    public static IndexSettings defaults() {
        return new IndexSettings(Backend.AUTO, FlixConfig.DEFAULT_NODE_SIZE, FlixConfig.DEFAULT_INITIAL_FILL, 0, 0,
                GpuMemoryBudget.NONE, true);
    }

    public IndexSettings withBackend(Backend b) {
        return new IndexSettings(b, nodeSize, initialFill, threads, devices, gpuMemoryBudget, exactKeyTable);
    }

    public IndexSettings withThreads(int t) {
        return new IndexSettings(backend, nodeSize, initialFill, t, devices, gpuMemoryBudget, exactKeyTable);
    }

    public IndexSettings withDevices(int d) {
        return new IndexSettings(backend, nodeSize, initialFill, threads, d, gpuMemoryBudget, exactKeyTable);
    }

    public IndexSettings withGpuMemoryBudget(GpuMemoryBudget budget) {
        return new IndexSettings(backend, nodeSize, initialFill, threads, devices, budget, exactKeyTable);
    }

    public IndexSettings withExactKeyTable(boolean kept) {
        return new IndexSettings(backend, nodeSize, initialFill, threads, devices, gpuMemoryBudget, kept);
    }

    /**
     * The config of one subtask: its device is its index modulo {@link #deviceCount()}, its threads a share of the
     * cores.
     *
     * @param subtaskIndex  the subtask's index
     * @param sharingCores  subtasks of this operator that run on this machine
     * @throws IllegalArgumentException where more devices are asked than this task manager sees
     */
    public FlixConfig configFor(int subtaskIndex, int sharingCores) {
        return configFor(subtaskIndex, sharingCores, backend.devices());
    }

    /**
     * As {@link #configFor(int, int)}, where the task manager sees {@code visibleDevices} usable CUDA devices (as
     * {@link Backend#devices()} counts them).
     */
    public FlixConfig configFor(int subtaskIndex, int sharingCores, int visibleDevices) {
        return configFor(subtaskIndex, sharingCores, ordinals(visibleDevices));
    }

    /**
     * As {@link #configFor(int, int)}, on the task manager's GPUs {@code taskManagerGpus} (CUDA ordinals: those Flink
     * assigned to it, or every one it sees): subtask {@code i} on the {@code i mod n}-th of the {@link #gpusToUse}.
     */
    public FlixConfig configFor(int subtaskIndex, int sharingCores, List<Integer> taskManagerGpus) {
        final List<Integer> gpus = gpusToUse(taskManagerGpus);
        final int subtaskThreads = threadsSharedBy(sharingCores);
        return new FlixConfig(backend, nodeSize, initialFill, subtaskThreads, gpus.get(subtaskIndex % gpus.size()),
                gpuMemoryBudget, GpuTuning.DEFAULTS, 0, exactKeyTable);
    }

    /**
     * The config of an index that {@code readers} threads look up at once (a dimension held once per task manager
     * for its subtasks), on CUDA device {@code device}: updates run alone, on the threads set here or every core;
     * each lookup call on the threads set here or its share of the cores, {@code cores / readers}, as a keyed
     * subtask's index has. On the CPU, from {@link #SHARDED_MIN_THREADS} update threads, the index is cut into
     * {@link #SHARDS_PER_THREAD} key-range shards per update thread ({@link FlixConfig#shards()}), so that an update
     * batch runs each shard's part on one thread, several at once, as the keyed mode's subtasks each update their own
     * index.
     */
    public FlixConfig configForReaders(int device, int readers) {
        final int updateThreads = threadsSharedBy(1);
        return new FlixConfig(backend, nodeSize, initialFill, updateThreads, device, gpuMemoryBudget,
                GpuTuning.DEFAULTS, threadsSharedBy(readers), exactKeyTable, shardsFor(updateThreads));
    }

    /**
     * The most updates a dimension held once per task manager applies in one batch under a load, where the job sets
     * none: {@link #LOAD_BATCH_MAX_SHARDED} where its index runs on the CPU cut into key-range shards
     * ({@link #shardsFor}), else {@link #LOAD_BATCH_MAX}. Lookups wait while a batch is applied, so a larger batch is
     * a longer wait for them during a load or a burst of updates.
     *
     * @param running the backend the dimension's index runs on
     */
    public int loadBatchMax(Backend running) {
        return running == Backend.CPU && shardsFor(threadsSharedBy(1)) > 1 ? LOAD_BATCH_MAX_SHARDED : LOAD_BATCH_MAX;
    }

    /** Key-range shards of an index updated on {@code updateThreads}. */
    static int shardsFor(int updateThreads) {
        return updateThreads >= SHARDED_MIN_THREADS
                ? Math.min(FlixConfig.MAX_SHARDS, SHARDS_PER_THREAD * updateThreads) : 1;
    }

    /** The threads set here, or the cores divided among {@code sharing} users (at least one). */
    private int threadsSharedBy(int sharing) {
        final int cores = Runtime.getRuntime().availableProcessors();
        return threads > 0 ? threads : Math.max(1, cores / Math.max(1, sharing));
    }

    /**
     * The GPUs this task manager uses: {@link #devices()} where set, else every CUDA device it sees (one where it sees
     * none: the index then goes to the CPU, or fails to open on the GPU with the reason). CUDA numbers the devices a
     * process sees 0, 1, ... in the order {@code CUDA_VISIBLE_DEVICES} lists them, whatever their physical ids: those
     * are the ordinals used.
     *
     * @throws IllegalArgumentException where {@link #devices()} asks for more devices than the task manager sees and
     *     the index may go to the GPU (backend GPU, or AUTO with a GPU usable)
     */
    public int deviceCount() {
        return deviceCount(backend.devices());
    }

    /** As {@link #deviceCount()}, where the task manager sees {@code visibleDevices} usable CUDA devices. */
    public int deviceCount(int visibleDevices) {
        return gpusToUse(ordinals(visibleDevices)).size();
    }

    /**
     * The CUDA ordinals this task manager's indexes use, of {@code taskManagerGpus} (those Flink assigned to it, or
     * every device it sees; empty where it sees none): the first {@link #devices()} of them where set, else all
     * (device 0 where there are none: the index then goes to the CPU, or fails to open on the GPU with the reason).
     *
     * @throws IllegalArgumentException where {@link #devices()} asks for more devices than there are and the index may
     *     go to the GPU (backend GPU, or AUTO with a GPU usable)
     */
    public List<Integer> gpusToUse(List<Integer> taskManagerGpus) {
        if (taskManagerGpus.isEmpty()) {
            return devices == 0 ? List.of(0) : ordinals(devices);
        }
        if (devices == 0) {
            return List.copyOf(taskManagerGpus);
        }
        if (devices > taskManagerGpus.size()) {
            final String listed = System.getenv("CUDA_VISIBLE_DEVICES");
            throw new IllegalArgumentException("devices is " + devices + ", but this task manager sees "
                    + taskManagerGpus.size() + " CUDA device(s) " + taskManagerGpus
                    + (listed == null ? "" : " (CUDA_VISIBLE_DEVICES=" + listed + ")") + ": set devices to at most "
                    + taskManagerGpus.size() + ", or to 0 for every device it sees");
        }
        return List.copyOf(taskManagerGpus.subList(0, devices));
    }

    /** CUDA ordinals 0 to count - 1. */
    private static List<Integer> ordinals(int count) {
        return IntStream.range(0, count).boxed().toList();
    }
}
