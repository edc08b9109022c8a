package io.flix.index.gpu;

import java.util.function.LongSupplier;

/**
 * When the GPU index measures, cuts or flattens its node chains. One warp walks a bucket's chain serially, so a
 * bucket that takes a large share of the inserts grows a long chain that its warp, and every unsorted get and range
 * into it, walks. The policy keeps an upper bound on how much the longest chain grew since the buckets were last
 * laid out or their chains cut (each upsert's count pass reports the most nodes one bucket gained), so that the
 * chains are measured only where they may have grown:
 * <ul>
 *   <li>an upsert after which the bound passes {@code max(64, size / 32768)} nodes ends with a restructure
 *       ({@code -Dflix.gpu.autoRestructure=false} turns that off);</li>
 *   <li>before unsorted gets and ranges, where the bound passes {@link #longChain()} nodes, the chains are
 *       measured and, if one is that long, every chain longer than {@link #chainGroup()} nodes is cut into buckets
 *       of that many nodes;</li>
 *   <li>unsorted gets take the one-thread-a-query path while no chain is longer than
 *       {@link #ANY_ORDER_CHAIN_MAX} + 1 nodes, measured where the bound alone cannot say.</li>
 * </ul>
 * The index does the measuring and cutting on the device and tells the policy what it found.
 */
final class ChainPolicy {

    /**
     * Unsorted gets take the one-thread-a-query path while no chain is longer than this many nodes (plus one):
     * each thread walks its chain from the head, where the sorted path's warp walks it once for all the queries
     * of its bucket. H200, 2^26 gets into the skewed X3Y90 and X6Y90 rounds (chains of tens of nodes): 6.5-9 ms
     * one thread a query, 10-10.4 ms fully sorted.
     */
    static final int ANY_ORDER_CHAIN_MAX = Integer.getInteger("flix.gpu.anyOrderChainMax", 256);

    /** Upper bound on how much the longest chain grew since the buckets were last laid out or their chains cut. */
    private long chainGrowthBound;
    /** Whether chainGrowthBound was cut to the longest chain measured since the last upsert. */
    private boolean chainBoundMeasured;
    /** -Dflix.gpu.autoRestructure=false turns the automatic restructure of long chains off. */
    private boolean autoRestructure = Boolean.parseBoolean(System.getProperty("flix.gpu.autoRestructure", "true"));

    /** The buckets were laid out anew (build, restructure): every chain is one node or none. */
    void laidOut() {
        chainGrowthBound = 0;
    }

    /** An upsert made no bucket's chain more than {@code mostNodesGained} nodes longer. */
    void upserted(long mostNodesGained) {
        chainGrowthBound += mostNodesGained;
        chainBoundMeasured = false;
    }

    /** Whether the upsert just done ends with a restructure of the index, now of {@code size} keys. */
    boolean restructureAfterUpsert(long size) {
        return autoRestructure && chainGrowthBound > autoRestructureChain(size);
    }

    /**
     * Chain length beyond which an upsert restructures on its own. One warp walks a bucket's chain serially
     * (about 2 us a node on an H200) while a restructure costs about 0.05 ns a key, so chains are cut back when
     * walking one costs about as much as a restructure: size / 32768 nodes, at least 64. This bounds the cost of
     * skewed inserts, such as ever-growing ids that all land in the last bucket, between explicit restructures.
     */
    private static long autoRestructureChain(long size) {
        return Math.max(64, size / 32768);
    }

    /** Whether a chain may be longer than {@link #longChain()} nodes: then the index measures them before walks. */
    boolean mayHaveLongChains() {
        return chainGrowthBound + 1 > longChain();
    }

    /** The chains were measured before walks: the longest has {@code longest} nodes. Returns whether to cut them. */
    boolean measuredBeforeWalks(long longest) {
        chainGrowthBound = Math.max(0, longest - 1);
        chainBoundMeasured = true;
        return longest > longChain();
    }

    /** The chains were cut into buckets of at most {@link #chainGroup()} nodes. */
    void cutIntoGroups() {
        chainGrowthBound = chainGroup() - 1;
    }

    /**
     * Whether no chain is longer than ANY_ORDER_CHAIN_MAX + 1 nodes. Where the growth bound says it may be, the
     * chains are measured once ({@code longestChain}, until the next upsert) and the bound cut to what they are.
     */
    boolean shortForAnyOrder(LongSupplier longestChain) {
        if (chainGrowthBound > ANY_ORDER_CHAIN_MAX && !chainBoundMeasured) {
            chainGrowthBound = Math.min(chainGrowthBound, longestChain.getAsLong() - 1);
            chainBoundMeasured = true;
        }
        return chainGrowthBound <= ANY_ORDER_CHAIN_MAX;
    }

    /** Chains longer than this are cut before unsorted gets and ranges (-Dflix.gpu.longChain, default 16). */
    static int longChain() {
        return Integer.getInteger("flix.gpu.longChain", 16);
    }

    /** Nodes a bucket keeps where a long chain is cut (-Dflix.gpu.chainGroup, default 8). */
    static int chainGroup() {
        return Math.max(1, Integer.getInteger("flix.gpu.chainGroup", 8));
    }

    /** Turns the automatic restructure of long chains on or off (tests that build long chains on purpose). */
    void autoRestructure(boolean on) {
        autoRestructure = on;
    }
}
