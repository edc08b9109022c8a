package io.flix.index.cpu;

import java.util.Arrays;

/**
 * The CPU index's node pool: primitive arrays indexed by node id, and a free list of node ids. Keys and values
 * live in segments of {@code 2^15} slots (256 KiB each), so the pool grows by adding segments instead of copying
 * everything (the per-node metadata arrays grow by half and are a node size's fraction of that), and holds more
 * keys than one Java array could. At most about {@code 2^31} nodes.
 *
 * <p>The index links the nodes into chains and reads and writes the arrays in its hot loops directly; the pool
 * owns their memory: it hands out node ids ({@link #reserve}), grows, and takes freed nodes back.
 */
final class NodePool {

    /**
     * Key (and value) slots per pool segment: 2^15 (256 KiB). Below G1's humongous-object threshold for every region
     * size (half of at least 1 MiB): a power-of-two array of a region's size or more takes an extra region for its
     * header, which made 8 MiB segments cost 12 MiB of heap.
     */
    private static final int SEGMENT_SLOTS_SHIFT = 15;
    /** Most nodes: ids are ints and metadata arrays are indexed by them. */
    static final int MAX_NODES = Integer.MAX_VALUE - 8;

    private final int nodeShift;
    /** log2 of the nodes per key/value segment. */
    private final int segmentShift;
    private final int segmentMask;

    /** Segment {@code node >>> segmentShift}, slots from {@code (node & segmentMask) << nodeShift}. */
    long[][] nodeKeys;
    long[][] nodeValues;
    /** Nodes the key/value segments hold (the metadata arrays may be longer). */
    int nodeCapacity;
    long[] nodeMax;
    int[] nodeCount;
    int[] nodeNext;
    /** Node ids {@code [0, nodesHandedOut)} have been used at some time; higher ids up to capacity are fresh. */
    int nodesHandedOut;
    int[] freeNodes;
    int freeCount;
    long nodesInUse;

    /** An empty pool (no arrays until {@link #reset}) of nodes of {@code nodeSize} keys, a power of two. */
    NodePool(int nodeSize) {
        this.nodeShift = Integer.numberOfTrailingZeros(nodeSize);
        this.segmentShift = SEGMENT_SLOTS_SHIFT - nodeShift;
        this.segmentMask = (1 << segmentShift) - 1;
    }

    /** An empty pool that holds {@code capacity} nodes, none handed out. */
    void reset(int capacity) {
        checkNodeCapacity(capacity);
        nodeKeys = newSegments(capacity);
        nodeValues = newSegments(capacity);
        nodeCapacity = capacity;
        nodeMax = new long[capacity];
        nodeCount = new int[capacity];
        nodeNext = new int[capacity];
        freeNodes = new int[capacity];
        freeCount = 0;
        nodesHandedOut = 0;
        nodesInUse = 0;
    }

    /**
     * Takes a new layout of {@code nodes} nodes, all in use: their keys and values in segments made by
     * {@link #newSegments}, their counts, links and max keys.
     */
    void adoptLayout(int nodes, long[][] keys, long[][] values, int[] counts, int[] next, long[] max) {
        nodeKeys = keys;
        nodeValues = values;
        nodeCapacity = nodes;
        nodeCount = counts;
        nodeNext = next;
        nodeMax = max;
        freeNodes = new int[nodes];
        freeCount = 0;
        nodesHandedOut = nodes;
        nodesInUse = nodes;
    }

    /** Nodes {@code [0, nodes)} of a pool just reset are linked. */
    void linkedFirst(int nodes) {
        nodesHandedOut = nodes;
        nodesInUse = nodes;
    }

    /** Puts a node that is not linked on the free list. */
    void free(int node) {
        freeNodes[freeCount++] = node;
    }

    /** Hands out {@code count} node ids, free ones first, growing the pool before anything is taken. */
    int[] reserve(int count, BatchScratch s) {
        final int fromFree = Math.min(count, freeCount);
        final int fresh = count - fromFree;
        ensureNodeCapacity((long) nodesHandedOut + fresh);
        final int[] ids = count <= s.nodeIds.length ? s.nodeIds : (s.nodeIds = new int[count]);
        System.arraycopy(freeNodes, freeCount - fromFree, ids, 0, fromFree);
        freeCount -= fromFree;
        for (int i = fromFree; i < count; i++) {
            ids[i] = nodesHandedOut++;
        }
        return ids;
    }

    /**
     * Grows the pool to at least {@code required} nodes: a first small segment doubles until full size, then whole
     * segments are added; metadata arrays grow by half. Nothing is reallocated when there is room.
     */
    private void ensureNodeCapacity(long required) {
        if (required <= nodeCapacity) {
            return;
        }
        checkNodeCapacity(required);
        final long segmentNodes = 1L << segmentShift;
        final long target = required < segmentNodes
                ? Math.min(segmentNodes, Math.max(required, 2L * nodeCapacity))
                : Math.min(MAX_NODES, ceilDiv(required, segmentNodes) * segmentNodes);
        nodeKeys = resizeSegments(nodeKeys, (int) target);
        nodeValues = resizeSegments(nodeValues, (int) target);
        nodeCapacity = (int) target;
        if (nodeMax.length < target) {
            final int meta = (int) Math.min(MAX_NODES, Math.max(target, nodeMax.length + (nodeMax.length >> 1)));
            nodeMax = Arrays.copyOf(nodeMax, meta);
            nodeCount = Arrays.copyOf(nodeCount, meta);
            nodeNext = Arrays.copyOf(nodeNext, meta);
            freeNodes = Arrays.copyOf(freeNodes, meta);
        }
    }

    /** Empty segments for {@code nodes} nodes (a new layout's keys or values). */
    long[][] newSegments(int nodes) {
        return resizeSegments(new long[0][], nodes);
    }

    /** Segments holding {@code nodes} nodes, keeping {@code old}'s contents; only the last may be shorter. */
    private long[][] resizeSegments(long[][] old, int nodes) {
        final int segmentNodes = 1 << segmentShift;
        final int count = (int) ceilDiv(nodes, segmentNodes);
        final long[][] segments = Arrays.copyOf(old, Math.max(count, old.length));
        for (int i = 0; i < count; i++) {
            final int slots = Math.min(segmentNodes, nodes - i * segmentNodes) << nodeShift;
            if (segments[i] == null) {
                segments[i] = new long[slots];
            } else if (segments[i].length < slots) {
                segments[i] = Arrays.copyOf(segments[i], slots);
            }
        }
        return segments;
    }

    static void checkNodeCapacity(long nodes) {
        if (nodes > MAX_NODES) {
            throw new IllegalStateException("the index would need " + nodes + " nodes; at most " + MAX_NODES);
        }
    }

    /** The segment of {@code segments} (the pool's, or a new layout's) that holds the node. */
    long[] segmentOf(long[][] segments, int node) {
        return segments[node >>> segmentShift];
    }

    long[] keySegment(int node) {
        return nodeKeys[node >>> segmentShift];
    }

    long[] valueSegment(int node) {
        return nodeValues[node >>> segmentShift];
    }

    /** Index of the node's first slot in its segment. */
    int slotOf(int node) {
        return (node & segmentMask) << nodeShift;
    }

    /** Bytes of every array of the pool (their capacity). */
    long bytes() {
        long bytes = 8L * nodeMax.length + 4L * nodeCount.length + 4L * nodeNext.length + 4L * freeNodes.length;
        for (int i = 0; i < nodeKeys.length; i++) {
            bytes += 8L * nodeKeys[i].length + 8L * nodeValues[i].length;
        }
        return bytes;
    }

    /** Drops every array. */
    void clear() {
        nodeKeys = null;
        nodeValues = null;
        nodeMax = null;
        nodeCount = null;
        nodeNext = null;
        freeNodes = null;
    }

    private static long ceilDiv(long a, long b) {
        return (a + b - 1) / b;
    }
}
