package io.flix.index;

/**
 * An ordered index from signed 64-bit keys to 64-bit values, operated on in batches (the FliX structure: a
 * max-key-per-bucket array over buckets that are chains of fixed-size nodes).
 *
 * <p>One contract for every backend:
 * <ul>
 *   <li>Keys cover the full {@code long} range. {@link #NOT_FOUND} is reserved and never a stored value.</li>
 *   <li>Batches need not be sorted. The {@code keysSorted} overloads let a caller promise ascending
 *       (non-decreasing) keys and skip the sort; a broken promise is an {@link IllegalArgumentException}.</li>
 *   <li>A key repeated in one {@code build} or {@code upsert} batch: the last occurrence in batch order wins.
 *       Deleting an absent key is a no-op.</li>
 *   <li>Bad input (a null array, {@code n} below zero or beyond an array, a reserved value, {@code lo > hi},
 *       a limit below one) throws {@link IllegalArgumentException} naming the argument, before anything
 *       changes.</li>
 *   <li>Concurrency: lookups ({@code get}, {@code ceiling}, {@code floor}, {@code range}, {@code exportFrom},
 *       {@code exportAfter}, {@code export}, {@code size}, {@code stats}, {@code backend}) may be called from
 *       several threads at once; updates ({@code build}, {@code upsert}, {@code delete}, {@code restructure}) and
 *       {@code close} are exclusive: each waits for the calls running and holds off the others until it returns.
 *       So every call sees the index between two updates, never during one, and answers exactly as if the calls
 *       had run one at a time in some order. Calls are served in arrival order: a stream of lookups does not
 *       hold off an update. How far lookups overlap is the backend's: the CPU backend runs them in parallel, the
 *       GPU backend one after the other (its batch buffers and stream belong to the index). Each call may use
 *       many threads (or the GPU) inside.</li>
 *   <li>{@code close} waits for the calls running; any call after it throws {@link IllegalStateException}.</li>
 * </ul>
 *
 * <p>Backends extend {@link AbstractFlixIndex}, which holds the concurrency contract and the closed state.
 */
public interface FlixIndex extends AutoCloseable {

    /** Written where a lookup finds nothing; rejected as a value. */
    long NOT_FOUND = Long.MIN_VALUE;

    /** Opens an empty index as the config says. */
    static FlixIndex open(FlixConfig config) {
        return Backends.open(config);
    }

    /**
     * Releases what this class loader's backends hold between indexes: the GPU backend's copy threads, pinned staging
     * memory, kernel modules and hold on the devices' contexts. Call only where no index of this class loader is open
     * or will be opened; Flink's operators call it as the job's user-code class loader is released.
     */
    static void releaseBackendResources() {
        Backends.releaseResources();
    }

    /** Replaces the contents with the first {@code n} pairs. */
    default void build(long[] keys, long[] values, int n) {
        build(keys, values, n, false);
    }

    void build(long[] keys, long[] values, int n, boolean keysSorted);

    /** Builds from an export of this or another index. */
    default void build(SortedPairs pairs) {
        if (pairs == null) {
            throw new IllegalArgumentException("pairs must not be null");
        }
        build(pairs.keys(), pairs.values(), pairs.size(), true);
    }

    /** Inserts or replaces the first {@code n} pairs. */
    default void upsert(long[] keys, long[] values, int n) {
        upsert(keys, values, n, false);
    }

    void upsert(long[] keys, long[] values, int n, boolean keysSorted);

    /** Removes the first {@code n} keys where present. */
    default void delete(long[] keys, int n) {
        delete(keys, n, false);
    }

    void delete(long[] keys, int n, boolean keysSorted);

    /** Writes the value of each key to {@code valuesOut[i]}, {@link #NOT_FOUND} where absent. */
    default void get(long[] keys, int n, long[] valuesOut) {
        get(keys, n, valuesOut, false);
    }

    void get(long[] keys, int n, long[] valuesOut, boolean keysSorted);

    /**
     * Smallest stored key {@code >= keys[i]} and its value; where there is none, {@code keysOut[i] = 0} and
     * {@code valuesOut[i] = NOT_FOUND}.
     */
    default void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut) {
        ceiling(keys, n, keysOut, valuesOut, false);
    }

    void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted);

    /**
     * Largest stored key {@code <= keys[i]} and its value; where there is none, {@code keysOut[i] = 0} and
     * {@code valuesOut[i] = NOT_FOUND}.
     */
    default void floor(long[] keys, int n, long[] keysOut, long[] valuesOut) {
        floor(keys, n, keysOut, valuesOut, false);
    }

    void floor(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted);

    /** The stored pairs with keys in {@code [lo[i], hi[i]]}, in key order, at most {@code limitPerRange} each. */
    RangeResult range(long[] lo, long[] hi, int n, int limitPerRange);

    /**
     * As {@link #range(long[], long[], int, int)}, written where the backend can into the arrays of {@code reuse}
     * (an earlier result, may be null) where they are large enough: its offsets where they hold {@code n + 1}, its
     * keys and values where they hold the pairs found. The result may share arrays with {@code reuse}, whose
     * contents are then overwritten. A caller that runs large batches of ranges saves allocating (and zeroing) the
     * result arrays each time: at 2^22 ranges of 16 pairs they take 1 GiB. The GPU backend reuses them; by default
     * the arrays are new (where reuse's are too small, a little larger than this call needs, so that the next call
     * of a loop fits).
     */
    default RangeResult range(long[] lo, long[] hi, int n, int limitPerRange, RangeResult reuse) {
        return range(lo, hi, n, limitPerRange);
    }

    /**
     * Flattens node chains, merges underfull nodes and re-cuts bucket boundaries to the current keys at the
     * configured initial fill (paper section 3.5). Contents are unchanged.
     *
     * @return nodes in use before minus nodes in use after (negative when refilling to the initial fill
     *     needs more nodes than the chains held)
     */
    long restructure();

    /**
     * Copies stored pairs in key order, starting at the smallest key {@code >= fromKey}, until
     * {@code keysOut.length} pairs are copied or the index ends. The first page of a paged export (see
     * {@link #exportAfter}).
     *
     * @return the number of pairs copied
     */
    int exportFrom(long fromKey, long[] keysOut, long[] valuesOut);

    /**
     * Copies stored pairs in key order, starting at the smallest key {@code > afterKey}, until
     * {@code keysOut.length} pairs are copied or the index ends; after {@code Long.MAX_VALUE} there is none, so it
     * copies nothing. The next page of a paged export, which ends whatever keys are stored (the full range
     * included; a recipe of "the last key plus one" would wrap around at {@code Long.MAX_VALUE}):
     *
     * <pre>{@code
     * long[] keys = new long[4096];
     * long[] values = new long[4096];
     * for (int n = index.exportFrom(Long.MIN_VALUE, keys, values); n > 0;
     *         n = index.exportAfter(keys[n - 1], keys, values)) {
     *     write(keys, values, n);
     * }
     * }</pre>
     *
     * Each page is consistent on its own; pages taken while another thread updates the index may come from
     * different states of it ({@link #export()} is one state).
     *
     * @return the number of pairs copied
     */
    int exportAfter(long afterKey, long[] keysOut, long[] valuesOut);

    /**
     * All pairs in key order. Fails with {@link IllegalStateException} past {@code Integer.MAX_VALUE - 8} keys
     * (page through them with {@link #exportFrom} and {@link #exportAfter} instead).
     */
    default SortedPairs export() {
        final long size = size();
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("index holds " + size + " keys, too many for one array: page through "
                    + "them with exportFrom and exportAfter");
        }
        final long[] keys = new long[(int) size];
        final long[] values = new long[(int) size];
        final int copied = exportFrom(Long.MIN_VALUE, keys, values);
        return new SortedPairs(keys, values, copied);
    }

    /** Number of stored keys. */
    long size();

    IndexStats stats();

    Backend backend();

    /**
     * The CUDA device ordinal the index lives on (as the process numbers its visible devices), or -1 where it lives
     * on no one device (the CPU backend; a {@link MirroredIndex}, whose replicas each report theirs).
     */
    default int device() {
        return -1;
    }

    /**
     * Releases everything the index holds (its structure, batch scratch, threads and device memory), after the
     * calls running have returned. Idempotent; any other call afterwards throws {@link IllegalStateException}.
     */
    @Override
    void close();
}
