package io.flix.index.gpu;

import io.flix.index.GpuTuning;

import java.util.function.LongSupplier;

/**
 * When the GPU index measures, cuts or flattens its node chains. One warp walks a bucket's chain serially, so a
 * bucket that takes a large share of the inserts grows a long chain that its warp, and every unsorted get and range
 * into it, walks. The policy keeps an upper bound on how much the longest chain grew since the buckets were last
 * laid out or their chains cut (each upsert's count pass reports the most nodes one bucket gained), so that the
 * chains are measured only where they may have grown:
 * <ul>
 *   <li>an upsert after which the bound passes {@code max(64, size / 32768)} nodes ends with a restructure
 *       (unless {@link GpuTuning#autoRestructure()} is off);</li>
 *   <li>before unsorted gets and ranges, where the bound passes {@link #longChain()} nodes, the chains are
 *       measured and, if one is that long, every chain longer than {@link #chainGroup()} nodes is cut into buckets
 *       of that many nodes;</li>
 *   <li>unsorted gets take the one-thread-a-query path while no chain is longer than
 *       {@link GpuTuning#anyOrderChainMax()} + 1 nodes (each thread walks its chain from the head, where the
 *       sorted path's warp walks it once for all the queries of its bucket), measured where the bound alone
 *       cannot say.</li>
 * </ul>
 * The index does the measuring and cutting on the device and tells the policy what it found. The limits are the
 * index's {@link GpuTuning}.
 */
final class ChainPolicy {

    /** Upper bound on how much the longest chain grew since the buckets were last laid out or their chains cut. */
    private long chainGrowthBound;
    /** Whether chainGrowthBound was cut to the longest chain measured since the last upsert. */
    private boolean chainBoundMeasured;
    private GpuTuning tuning;

    ChainPolicy(GpuTuning tuning) {
        this.tuning = tuning;
    }

    /** Takes another tuning from the next call on. */
    void tune(GpuTuning newTuning) {
        this.tuning = newTuning;
    }

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
        return tuning.autoRestructure() && chainGrowthBound > autoRestructureChain(size);
    }

    /**
     * Chain length beyond which an upsert restructures on its own. One warp walks a bucket's chain serially
     * while a restructure costs a small fraction of a nanosecond a key (docs/gpu-tuning.md), so chains are cut back
     * when walking one costs about as much as a restructure: size / 32768 nodes, at least 64. This bounds the cost of
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
     * Whether no chain is longer than anyOrderChainMax + 1 nodes. Where the growth bound says it may be, the
     * chains are measured once ({@code longestChain}, until the next upsert) and the bound cut to what they are.
     */
    boolean shortForAnyOrder(LongSupplier longestChain) {
        final int max = tuning.anyOrderChainMax();
        if (chainGrowthBound > max && !chainBoundMeasured) {
            chainGrowthBound = Math.min(chainGrowthBound, longestChain.getAsLong() - 1);
            chainBoundMeasured = true;
        }
        return chainGrowthBound <= max;
    }

    /** Chains longer than this are cut before unsorted gets and ranges ({@link GpuTuning#longChain()}). */
    int longChain() {
        return tuning.longChain();
    }

    /** Nodes a bucket keeps where a long chain is cut ({@link GpuTuning#chainGroup()}). */
    int chainGroup() {
        return tuning.chainGroup();
    }
}
