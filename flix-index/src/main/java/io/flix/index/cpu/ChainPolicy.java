package io.flix.index.cpu;

import java.util.Arrays;

/**
 * The CPU index's chain policy, the paper's elastic strategy (section 3.4): bucket boundaries stay fixed until
 * {@code restructure()}, except that a chain that an upsert makes longer than {@value #MAX_CHAIN_NODES} nodes is
 * cut into one bucket per node, moving no keys. Without it an index filled by upserts alone (one bucket), or by
 * ever larger keys (the last bucket), would grow one chain that every batch walks. Each piece of an upsert notes
 * the buckets whose chain it made too long ({@link LongChains}); after the pieces, the index cuts them
 * ({@link #cutIntoOneBucketPerNode}).
 */
final class ChainPolicy {

    /** Longest chain an upsert leaves; longer ones are cut into one bucket per node. */
    static final int MAX_CHAIN_NODES = 32;

    private ChainPolicy() {
    }

    /** Buckets whose chain one piece of an upsert made longer than MAX_CHAIN_NODES, ascending. */
    static final class LongChains {
        private int[] buckets = new int[0];
        private int count;

        void note(int bucket) {
            if (count == buckets.length) {
                buckets = Arrays.copyOf(buckets, Math.max(8, 2 * count));
            }
            buckets[count++] = bucket;
        }
    }

    /** The bucket arrays after a cut: max keys, heads and their count. */
    record Buckets(long[] max, int[] head, int count) {
    }

    /**
     * Cuts each listed bucket (ascending within a piece, pieces in bucket order) into one bucket per node. The
     * nodes keep their keys: node {@code c} becomes a bucket with max {@code nodeMax[c]}, which keeps every
     * invariant since a chain's nodeMax values ascend and end at the bucket's max. The links between the nodes
     * of a cut chain are cut in {@code nodeNext}.
     *
     * @return the new bucket arrays, or null where nothing is cut: no chain listed, or too many buckets (the
     *         chains stay as they are; {@code restructure()} still flattens them)
     */
    static Buckets cutIntoOneBucketPerNode(LongChains[] longChains, long[] bucketMax, int[] bucketHead,
                                           int bucketCount, int[] nodeNext, long[] nodeMax) {
        long added = 0;
        int count = 0;
        for (LongChains piece : longChains) {
            count += piece.count;
            for (int i = 0; i < piece.count; i++) {
                for (int node = bucketHead[piece.buckets[i]]; node != CpuFlixIndex.NO_NODE; node = nodeNext[node]) {
                    added++;
                }
                added--;
            }
        }
        if (count == 0 || bucketCount + added > Integer.MAX_VALUE - 8) {
            return null;
        }
        final int newCount = (int) (bucketCount + added);
        final long[] newMax = new long[newCount];
        final int[] newHead = new int[newCount];
        int from = 0;
        int to = 0;
        for (LongChains piece : longChains) {
            for (int i = 0; i < piece.count; i++) {
                final int b = piece.buckets[i];
                System.arraycopy(bucketMax, from, newMax, to, b - from);
                System.arraycopy(bucketHead, from, newHead, to, b - from);
                to += b - from;
                int node = bucketHead[b];
                while (node != CpuFlixIndex.NO_NODE) {
                    final int next = nodeNext[node];
                    newMax[to] = nodeMax[node];
                    newHead[to++] = node;
                    nodeNext[node] = CpuFlixIndex.NO_NODE;
                    node = next;
                }
                from = b + 1;
            }
        }
        System.arraycopy(bucketMax, from, newMax, to, bucketCount - from);
        System.arraycopy(bucketHead, from, newHead, to, bucketCount - from);
        return new Buckets(newMax, newHead, newCount);
    }
}
