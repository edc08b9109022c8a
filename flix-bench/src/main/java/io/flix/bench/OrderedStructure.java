package io.flix.bench;

/** One structure under measurement, driven in batches; baselines apply a batch one key at a time. */
interface OrderedStructure extends AutoCloseable {

    /** Name in results, e.g. "flix", "TreeMap". */
    String name();

    /** "cpu" or "gpu". */
    String backend();

    void build(long[] keys, long[] values, int n);

    void get(long[] keys, int n, long[] valuesOut, boolean keysSorted);

    void upsert(long[] keys, long[] values, int n);

    void delete(long[] keys, int n);

    long size();

    /** Bytes the structure holds, or -1 where it cannot say. */
    long bytes();

    @Override
    void close();
}
