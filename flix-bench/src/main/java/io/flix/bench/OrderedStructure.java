package io.flix.bench;

import io.flix.index.RangeResult;

/**
 * One structure under measurement, driven in batches; baselines apply a batch one key at a time. Lookups write
 * {@code Long.MIN_VALUE} (FliX's NOT_FOUND) where nothing is found, as FliX does.
 */
interface OrderedStructure extends AutoCloseable {

    /** Name in results, e.g. "flix", "TreeMap". */
    String name();

    /** "cpu", "gpu" (end to end) or "gpu-resident" (device time alone, see ResidentStructure). */
    String backend();

    /** False for hash maps: they answer point lookups only, so successor and range lookups are not run. */
    default boolean ordered() {
        return true;
    }

    void build(long[] keys, long[] values, int n);

    void get(long[] keys, int n, long[] valuesOut, boolean keysSorted);

    /** Smallest stored key {@code >= keys[i]}; {@code keysOut[i] = 0, valuesOut[i] = Long.MIN_VALUE} where none. */
    default void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        throw new UnsupportedOperationException(name() + " is not ordered");
    }

    /** Stored pairs in each {@code [lo[i], hi[i]]}, in key order, at most {@code limitPerRange} each. */
    default RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        throw new UnsupportedOperationException(name() + " is not ordered");
    }

    void upsert(long[] keys, long[] values, int n);

    void delete(long[] keys, int n);

    /** Restructures (FliX) and returns the nodes recovered, or -1 where the structure has no such step. */
    default long restructure() {
        return -1;
    }

    /** Nodes in use, or -1 where the structure has no nodes. */
    default long nodes() {
        return -1;
    }

    long size();

    /**
     * The device time of the last timed call where the structure measures it itself (device-resident GPU calls,
     * whose uploads and downloads are not timed), else NaN: the caller's wall clock counts.
     */
    default double deviceMillis() {
        return Double.NaN;
    }

    /** Bytes the structure holds (measured or, for JDK maps, modelled: see the implementation), -1 if unknown. */
    long bytes();

    @Override
    void close();
}
