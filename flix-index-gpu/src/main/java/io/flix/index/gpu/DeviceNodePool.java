package io.flix.index.gpu;


import io.flix.index.GpuTuning;

import java.util.function.Consumer;

import jcuda.driver.CUdeviceptr;

/**
 * The GPU index's node pool in device memory, as structure of arrays: per node {@link GpuFlixIndex#NODE_SIZE}
 * keys and values, a count, a link and a max key (532 bytes a node with its free-stack slot), and the free stack
 * of node ids, {@code freeStack[0, freeTop)} free. The index links the nodes; the pool owns their memory.
 *
 * <p>It grows before anything changes, so that an out-of-memory or a refusal of the GPU memory budget leaves the
 * index as it was: a pool of {@link GpuTuning#inPlaceMinNodes()} nodes or more grows in place where the tuning
 * allows it ({@link GpuTuning#growInPlace()}) and the device has virtual memory management (memory mapped behind
 * reserved addresses: no copy, and never the old and the new pool at once), else into new arrays, copied. Build
 * and restructure cut it to the nodes in use.
 */
final class DeviceNodePool implements AutoCloseable {

    /** Nodes a pool holds at least. */
    static final int INITIAL_NODES = 1024;
    private static final long NODE_KEY_BYTES = GpuFlixIndex.NODE_SIZE * (long) Long.BYTES;

    private final GpuRuntime.DeviceContext device;
    private final DeviceMemoryLedger.Account memory;
    private final FlixKernels kernels;
    private final Consumer<String> trace;
    /** How the pool grows: in place from which size, and ahead while sorting. */
    private GpuTuning tuning;

    private DeviceBuffer nodeKeys;
    private DeviceBuffer nodeValues;
    private DeviceBuffer nodeCount;
    private DeviceBuffer nodeNext;
    private DeviceBuffer nodeMax;
    private DeviceBuffer freeStack;
    private int capacity;
    private long freeTop;

    /** Nodes the last upsert took off the free stack per batch key (growAhead's guess for the next); NaN before. */
    private double nodesPerKey = Double.NaN;

    /**
     * An empty pool (no nodes until {@link #grow}).
     *
     * @param memory where the pool's memory is reserved (the index's account)
     * @param trace  called with each step's name (profiling; may do nothing)
     */
    DeviceNodePool(GpuRuntime.DeviceContext device, DeviceMemoryLedger.Account memory, GpuTuning tuning,
                   FlixKernels kernels, Consumer<String> trace) {
        this.device = device;
        this.memory = memory;
        this.tuning = tuning;
        this.kernels = kernels;
        this.trace = trace;
    }

    /** Takes another tuning for the growths to come (arrays allocated already keep how they grow). */
    void tune(GpuTuning newTuning) {
        this.tuning = newTuning;
    }

    CUdeviceptr nodeKeys() {
        return nodeKeys.pointer();
    }

    CUdeviceptr nodeValues() {
        return nodeValues.pointer();
    }

    CUdeviceptr nodeCount() {
        return nodeCount.pointer();
    }

    CUdeviceptr nodeNext() {
        return nodeNext.pointer();
    }

    CUdeviceptr nodeMax() {
        return nodeMax.pointer();
    }

    CUdeviceptr freeStack() {
        return freeStack.pointer();
    }

    int capacity() {
        return capacity;
    }

    /** Free nodes: the top of the free stack. */
    long freeTop() {
        return freeTop;
    }

    long nodesInUse() {
        return capacity - freeTop;
    }

    /** Device bytes of every pool array. */
    long bytes() {
        return nodeKeys.bytes() + nodeValues.bytes() + nodeCount.bytes() + nodeNext.bytes() + nodeMax.bytes()
                + freeStack.bytes();
    }

    /**
     * Pool arrays allocated beside the pool, and their capacity in nodes: {@link #adopt} takes them in; closing them
     * instead (a layout that failed before) leaves the pool as it was.
     */
    record PoolArrays(DeviceBuffer[] buffers, int capacity) implements AutoCloseable {
        @Override
        public void close() {
            for (DeviceBuffer b : buffers) {
                b.close();
            }
        }
    }

    /**
     * The pool's size for a new layout of {@code usedNodes} nodes, contents not kept: the pool is cut to what the
     * nodes need (memory grows again on demand), so there is no slack after a build and a restructure returns
     * what the deletes freed. The arrays are allocated here, beside the pool, which stays as it is until
     * {@link #adopt}: a layout allocates before it checks what may still fail. Null where the pool's arrays serve.
     */
    PoolArrays allocateFor(int usedNodes) {
        final int poolNodes = Math.max(usedNodes, INITIAL_NODES);
        if (poolNodes > capacity) {
            return allocateArrays(poolNodes);
        }
        if (capacity - poolNodes > poolNodes / 4) {
            try {
                return allocateArrays(poolNodes);
            } catch (GpuOutOfMemoryException e) {
                // keep the larger pool: it holds the nodes as well
            }
        }
        return null;
    }

    /** Takes in arrays from {@link #allocateFor} (null: keeps its own), freeing its own; their contents are new. */
    void adopt(PoolArrays fresh) {
        if (fresh == null) {
            return;
        }
        closeArrays();
        final DeviceBuffer[] b = fresh.buffers();
        nodeKeys = b[0];
        nodeValues = b[1];
        nodeCount = b[2];
        nodeNext = b[3];
        nodeMax = b[4];
        freeStack = b[5];
        capacity = fresh.capacity();
    }

    /** Nodes {@code [0, usedNodes)} are in use, the others free (after a layout). */
    void fillFreeStack(int usedNodes) {
        kernels.fillFreeStack(freeStack.pointer(), 0L, usedNodes, capacity - usedNodes);
        freeTop = capacity - usedNodes;
    }

    /** An upsert of {@code batchKeys} keys took {@code nodes} off the free stack. */
    void took(long nodes, int batchKeys) {
        freeTop -= nodes;
        nodesPerKey = nodes / (double) batchKeys;
    }

    /** The free stack's top after a delete pushed the nodes it emptied. */
    void freeTop(long top) {
        freeTop = top;
    }

    /**
     * Grows a pool that grows in place, while the device sorts an upsert's batch of n, where the free stack may not
     * hold what the batch needs: twice the nodes a key took in the last upsert, or before the first upsert, for a
     * batch of at least a key a bucket, a node for every 16 keys (new keys at about 8 a bucket split most nodes
     * once). It grows by what the guess lacks only, not by half again, so that a guess too high costs little
     * memory (a batch of updates alone, after a build: a node for every 16 keys). Mapping memory is host
     * work, about as long as the sort of a large batch (docs/gpu-tuning.md), that would otherwise wait for the count
     * pass and hold the device idle; the count pass still grows the pool where
     * this guessed short.
     */
    void growAhead(int n, int numBuckets) {
        if (!tuning.growWhileSorting() || !nodeKeys.growsInPlace()) {
            return;
        }
        final double perKey = Double.isNaN(nodesPerKey) ? (n >= numBuckets ? 1.0 / 32 : 0) : nodesPerKey;
        final long expected = (long) Math.ceil(2 * perKey * n);
        final long target = capacity + (expected - freeTop);
        if (expected > freeTop && target <= Integer.MAX_VALUE) {
            try {
                grow(target, true);
                trace.accept("grow pool ahead to " + capacity);
            } catch (GpuOutOfMemoryException e) {
                // a guess: the count pass knows what the batch needs and grows the pool or fails cleanly
            }
        }
    }

    /** Grows the node pool until the free stack holds {@code nodes}. */
    void ensureFreeNodes(long nodes) {
        if (nodes <= freeTop) {
            return;
        }
        final long need = capacity + (nodes - freeTop);
        final long grown = Math.max(need, capacity + capacity / 2L);
        grow(grown, true);
        trace.accept("grow pool to " + grown);
    }

    /** Bytes of one node in each pool array: keys, values, counts, links, max keys, the free stack. */
    private static final long[] POOL_BYTES_PER_NODE = {NODE_KEY_BYTES, NODE_KEY_BYTES, 4, 4, 8, 4};
    private static final String[] POOL_ARRAYS = {"node keys", "node values", "node counts", "node links",
        "node max keys", "free node stack"};

    /**
     * Gives the node pool {@code newCapacity} nodes, keeping the old nodes when asked ({@code keep}): in place where
     * the pool grows in place, else into new buffers, copied.
     */
    void grow(long newCapacity, boolean keep) {
        final int oldCapacity = capacity;
        final int cap = checkedCapacity(newCapacity);
        if (keep && oldCapacity > 0 && nodeKeys.growsInPlace()) {
            growInPlace(cap);
            capacity = cap;
        } else {
            final PoolArrays fresh = allocateArrays(cap);
            if (keep && oldCapacity > 0) {
                final DeviceBuffer[] old = arrays();
                for (int i = 0; i < old.length - 1; i++) {
                    kernels.stream().copy(fresh.buffers()[i].pointer(), old[i].pointer(),
                            oldCapacity * POOL_BYTES_PER_NODE[i]);
                }
                if (freeTop > 0) {
                    kernels.stream().copy(fresh.buffers()[5].pointer(), freeStack.pointer(), freeTop * 4L);
                }
                kernels.stream().synchronize(); // the copies have read the old arrays
            }
            adopt(fresh);
        }
        if (keep && oldCapacity > 0) {
            kernels.fillFreeStack(freeStack.pointer(), freeTop, oldCapacity, cap - oldCapacity);
            freeTop += cap - oldCapacity;
        }
    }

    private static int checkedCapacity(long nodes) {
        if (nodes > Integer.MAX_VALUE) {
            throw new IllegalStateException("the GPU backend addresses at most " + Integer.MAX_VALUE + " nodes, "
                    + nodes + " requested");
        }
        return (int) nodes;
    }

    private static String describe(int cap) {
        return " (" + cap + " nodes of " + GpuFlixIndex.NODE_SIZE + ")";
    }

    /** New pool arrays for {@code cap} nodes, the pool untouched. */
    private PoolArrays allocateArrays(int cap) {
        final String what = describe(cap);
        return new PoolArrays(DeviceBuffer.allocateAll(POOL_ARRAYS.length,
                i -> allocatePoolArray(cap, i, POOL_ARRAYS[i] + what)), cap);
    }

    /** Maps memory behind every pool array; where one cannot grow, the others give theirs back. */
    private void growInPlace(int cap) {
        final String nodes = describe(cap);
        final DeviceBuffer[] pool = arrays();
        final long[] before = new long[pool.length];
        int grown = 0;
        try {
            for (; grown < pool.length; grown++) {
                before[grown] = pool[grown].bytes();
                pool[grown].growTo(cap * POOL_BYTES_PER_NODE[grown], POOL_ARRAYS[grown] + nodes);
            }
        } catch (RuntimeException e) {
            for (int i = 0; i < grown; i++) {
                pool[i].shrinkTo(before[i]);
            }
            throw e;
        }
    }

    /**
     * One pool array for {@code cap} nodes: for a large pool ({@link GpuTuning#inPlaceMinNodes()} nodes or more,
     * by default 2^20, about 280 MiB: memory is mapped in chunks of the device's granularity, 2 MiB, which would
     * weigh on a small pool, and copying a small pool costs little) where the tuning and the device allow, a buffer
     * that grows in place, its addresses reserved for as many nodes as the device's memory could hold.
     */
    private DeviceBuffer allocatePoolArray(int cap, int array, String what) {
        final long bytes = cap * POOL_BYTES_PER_NODE[array];
        if (!tuning.growInPlace() || !device.virtualMemoryManagement || cap < tuning.inPlaceMinNodes()) {
            return DeviceBuffer.allocate(memory, bytes, what);
        }
        final long reserve = Math.min(device.totalMemory, Integer.MAX_VALUE * POOL_BYTES_PER_NODE[array]);
        return DeviceBuffer.reserve(memory, device.ordinal, reserve, bytes, what);
    }

    private DeviceBuffer[] arrays() {
        return new DeviceBuffer[] {nodeKeys, nodeValues, nodeCount, nodeNext, nodeMax, freeStack};
    }

    /** Frees the pool's arrays (null-safe). */
    @Override
    public void close() {
        closeArrays();
    }

    private void closeArrays() {
        for (DeviceBuffer b : arrays()) {
            if (b != null) {
                b.close();
            }
        }
        nodeKeys = nodeValues = nodeCount = nodeNext = nodeMax = freeStack = null;
    }
}
