package io.flix.index;

/**
 * A snapshot of an index's shape and footprint.
 *
 * @param backend      the backend holding the index
 * @param size         number of keys
 * @param buckets      number of buckets (entries of the max-key-per-bucket array)
 * @param nodes        nodes in use by buckets
 * @param freeNodes    allocated nodes on the free list
 * @param nodeSize     keys per node
 * @param longestChain most nodes in one bucket
 * @param bytes        memory held by the index structure (device memory for the GPU backend)
 */
public record IndexStats(Backend backend, long size, long buckets, long nodes, long freeNodes, int nodeSize,
                         long longestChain, long bytes) {
}
