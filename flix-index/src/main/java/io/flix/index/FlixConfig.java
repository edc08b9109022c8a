package io.flix.index;

/**
 * How to open a {@link FlixIndex}. Build with {@link #builder()}; every setting is checked in {@link Builder#build()}.
 *
 * @param backend     where the index lives
 * @param nodeSize    keys per node (the paper's node size); the GPU backend requires 32
 * @param initialFill fraction of a node filled by {@code build} and {@code restructure}, in (0, 1]
 * @param threads     CPU backend worker threads
 * @param device      CUDA device ordinal for the GPU backend
 * @param gpuMemoryBudget the most device memory the GPU indexes of this process may hold on the device together
 *                    ({@link GpuMemoryBudget}; default {@link GpuMemoryBudget#NONE}, the device's size)
 * @param gpuTuning   the GPU backend's tuning ({@link GpuTuning}; default {@link GpuTuning#DEFAULTS})
 * @param lookupThreads CPU backend: one lookup call is split into work for at most this many threads (1: it runs
 *                    on the caller's thread), for an index that several threads look up at once (0: {@code threads});
 *                    lookup calls running at once also split the threads between them. Updates run alone and use
 *                    {@code threads}
 * @param exactKeyTable CPU backend: also keep every key with its value in a hash table beside the nodes, so that an
 *                    exact get reads about one cache line instead of walking buckets and nodes (about 16 to 32 more
 *                    bytes a key; every update writes it too). Floor, ceiling and range never read it
 * @param shards      CPU backend: 1 for one index whose updates are split over its threads; more cuts the keys into
 *                    this many ranges, each an index of its own ({@code io.flix.index.cpu.ShardedCpuIndex}), where a
 *                    batch spread over the ranges updates each range on one thread, all at once (less work a key
 *                    than one index's update split over the threads). Ignored by the GPU backend
 */
public record FlixConfig(Backend backend, int nodeSize, double initialFill, int threads, int device,
                         GpuMemoryBudget gpuMemoryBudget, GpuTuning gpuTuning, int lookupThreads,
                         boolean exactKeyTable, int shards) {

    public static final int DEFAULT_NODE_SIZE = 32;
    public static final double DEFAULT_INITIAL_FILL = 0.5;
    /** The most key-range shards of a CPU index. */
    public static final int MAX_SHARDS = 1024;

    public FlixConfig {
        if (backend == null) {
            throw new IllegalArgumentException("backend must not be null");
        }
        if (nodeSize < 4 || nodeSize > 1024 || Integer.bitCount(nodeSize) != 1) {
            throw new IllegalArgumentException("nodeSize must be a power of two in [4, 1024], was " + nodeSize);
        }
        if (!(initialFill > 0.0 && initialFill <= 1.0)) {
            throw new IllegalArgumentException("initialFill must be in (0, 1], was " + initialFill);
        }
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, was " + threads);
        }
        if (device < 0) {
            throw new IllegalArgumentException("device must be >= 0, was " + device);
        }
        if (gpuMemoryBudget == null) {
            throw new IllegalArgumentException("gpuMemoryBudget must not be null (GpuMemoryBudget.NONE for none)");
        }
        if (gpuTuning == null) {
            throw new IllegalArgumentException("gpuTuning must not be null (GpuTuning.DEFAULTS for the defaults)");
        }
        if (lookupThreads < 0) {
            throw new IllegalArgumentException("lookupThreads must be >= 0, was " + lookupThreads);
        }
        if (shards < 1 || shards > MAX_SHARDS) {
            throw new IllegalArgumentException("shards must be in [1, " + MAX_SHARDS + "], was " + shards);
        }
    }

    /** A config with one CPU index (no key-range shards). */
    public FlixConfig(Backend backend, int nodeSize, double initialFill, int threads, int device,
                      GpuMemoryBudget gpuMemoryBudget, GpuTuning gpuTuning, int lookupThreads,
                      boolean exactKeyTable) {
        this(backend, nodeSize, initialFill, threads, device, gpuMemoryBudget, gpuTuning, lookupThreads,
                exactKeyTable, 1);
    }

    /** A config whose lookups may use all its threads, with the CPU backend's exact-key table. */
    public FlixConfig(Backend backend, int nodeSize, double initialFill, int threads, int device,
                      GpuMemoryBudget gpuMemoryBudget, GpuTuning gpuTuning) {
        this(backend, nodeSize, initialFill, threads, device, gpuMemoryBudget, gpuTuning, 0, true);
    }

    /** A config with no GPU memory budget and the default GPU tuning. */
    public FlixConfig(Backend backend, int nodeSize, double initialFill, int threads, int device) {
        this(backend, nodeSize, initialFill, threads, device, GpuMemoryBudget.NONE, GpuTuning.DEFAULTS);
    }

    /** This config with another GPU memory budget. */
    public FlixConfig withGpuMemoryBudget(GpuMemoryBudget budget) {
        return toBuilder().gpuMemoryBudget(budget).build();
    }

    /** This config with another GPU tuning. */
    public FlixConfig withGpuTuning(GpuTuning tuning) {
        return toBuilder().gpuTuning(tuning).build();
    }

    /** This config with another cap on a lookup call's threads (0: {@link #threads()}). */
    public FlixConfig withLookupThreads(int cap) {
        return toBuilder().lookupThreads(cap).build();
    }

    /** This config with or without the CPU backend's exact-key table. */
    public FlixConfig withExactKeyTable(boolean kept) {
        return toBuilder().exactKeyTable(kept).build();
    }

    /** This config with {@code count} key-range shards on the CPU backend (1: one index). */
    public FlixConfig withShards(int count) {
        return toBuilder().shards(count).build();
    }

    /** The most threads a lookup call is split for: {@link #lookupThreads()} where set, at most {@link #threads()}. */
    public int lookupThreadCap() {
        return lookupThreads == 0 ? threads : Math.min(threads, lookupThreads);
    }

    /** Keys per node after {@code build} and {@code restructure}: at least 1, at most the node size. */
    public int keysPerBuiltNode() {
        return Math.max(1, Math.min(nodeSize, (int) Math.round(nodeSize * initialFill)));
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding this config's settings. */
    public Builder toBuilder() {
        return builder().backend(backend).nodeSize(nodeSize).initialFill(initialFill).threads(threads).device(device)
                .gpuMemoryBudget(gpuMemoryBudget).gpuTuning(gpuTuning).lookupThreads(lookupThreads)
                .exactKeyTable(exactKeyTable).shards(shards);
    }

    /**
     * Defaults: AUTO backend, node size 32, initial fill 0.5, one thread per available processor, device 0, no GPU
     * memory budget, the default GPU tuning, lookups on every thread, the CPU backend's exact-key table kept, one CPU
     * index (no shards).
     */
    public static final class Builder {
        private Backend backend = Backend.AUTO;
        private int nodeSize = DEFAULT_NODE_SIZE;
        private double initialFill = DEFAULT_INITIAL_FILL;
        private int threads = Runtime.getRuntime().availableProcessors();
        private int device = 0;
        private GpuMemoryBudget gpuMemoryBudget = GpuMemoryBudget.NONE;
        private GpuTuning gpuTuning = GpuTuning.DEFAULTS;
        private int lookupThreads = 0;
        private boolean exactKeyTable = true;
        private int shards = 1;

        private Builder() {
        }

        public Builder backend(Backend backend) {
            this.backend = backend;
            return this;
        }

        public Builder nodeSize(int nodeSize) {
            this.nodeSize = nodeSize;
            return this;
        }

        public Builder initialFill(double initialFill) {
            this.initialFill = initialFill;
            return this;
        }

        public Builder threads(int threads) {
            this.threads = threads;
            return this;
        }

        public Builder device(int device) {
            this.device = device;
            return this;
        }

        /** The most device memory the GPU indexes of this process may hold on the device together. */
        public Builder gpuMemoryBudget(GpuMemoryBudget budget) {
            this.gpuMemoryBudget = budget;
            return this;
        }

        public Builder gpuTuning(GpuTuning tuning) {
            this.gpuTuning = tuning;
            return this;
        }

        /** The most threads one lookup call is split for (0, the default: {@link #threads}). */
        public Builder lookupThreads(int lookupThreads) {
            this.lookupThreads = lookupThreads;
            return this;
        }

        /** Whether the CPU backend keeps its exact-key table (default: it does). */
        public Builder exactKeyTable(boolean kept) {
            this.exactKeyTable = kept;
            return this;
        }

        /** Key-range shards of a CPU index (default 1: one index). */
        public Builder shards(int shards) {
            this.shards = shards;
            return this;
        }

        public FlixConfig build() {
            return new FlixConfig(backend, nodeSize, initialFill, threads, device, gpuMemoryBudget, gpuTuning,
                    lookupThreads, exactKeyTable, shards);
        }
    }
}
