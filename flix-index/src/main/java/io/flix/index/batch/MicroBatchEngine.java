package io.flix.index.batch;

import io.flix.index.Backend;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;
import io.flix.index.sort.KeySorter;
import io.flix.index.sort.SortedSearch;

import java.util.BitSet;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs an arrival-ordered {@link OperationBatch} of mixed operations on one {@link FlixIndex} as a few bulk index
 * calls, with exactly the results that executing the operations one at a time on a sorted map would give, and
 * leaving the index in exactly the state that sequential execution would leave.
 *
 * <h2>Approach: read the pre-batch index, overlay the batch, write the net effect</h2>
 * Every lookup is answered from the index as it was before the batch (the <em>pre-batch</em> index {@code P})
 * overlaid with the batch's own updates; the index is written once, at the end. Let {@code T} be the sorted set
 * of keys the batch updates. The state a lookup at position {@code p} sees is {@code (P \ T)} plus those keys of
 * {@code T} whose latest update before {@code p} is an upsert (or, with no update before {@code p}, that are in
 * {@code P}).
 * <ol>
 *   <li><b>Exact lookups</b>: the upserts, deletes and gets are stable-sorted by key ({@link KeySorter}), so each
 *       key's operations form a run in arrival order. A get before its run's first update reads {@code P} (one
 *       bulk get of those keys, sorted); a later one reads the preceding update (its value, or
 *       {@code NOT_FOUND} after a delete).</li>
 *   <li><b>Ordered lookups</b> (only when the batch has any): the bulk get also fetches the pre-batch value of
 *       every key of {@code T}. One pass in arrival order then keeps a bit set over {@code T} (key present now)
 *       and the current values, applying each upsert/delete as it comes, and answers each ordered lookup at its
 *       position by merging two candidates: the nearest present key of {@code T} ({@link BitSet#nextSetBit},
 *       {@link BitSet#previousSetBit}), and the answer from {@code P} without the <em>droppable</em> keys
 *       {@code D}: the keys of {@code T} that are in {@code P} and deleted somewhere in the batch. Only those can
 *       be missing at some position although {@code P} has them; a key of {@code P} that the batch only upserts
 *       is present throughout, so the {@code T} side always finds it first (on a tie the {@code T} side wins: it
 *       has the current value). The {@code P \ D} answer does not depend on the position: for a ceiling of
 *       {@code k} it is {@code c = ceiling_P(k)} unless {@code c} is in {@code D}; then it is the smallest key of
 *       {@code P \ D} above {@code c}, which the same bulk call answers by also asking, for each key {@code d} of
 *       {@code D}, for {@code ceiling_P(d + 1)}, and chaining through {@code D} (a right-to-left pass). So the
 *       lookups' keys and these gap keys go in one sorted bulk ceiling call; floors likewise with {@code d - 1}.
 *       A range {@code [lo, hi]} with limit {@code L} asks {@code P} for {@code L + c} pairs, where {@code c}
 *       counts the keys of {@code D} within {@code [lo, hi]}: the pairs read cover at least {@code L} keys
 *       present at the range's position, or the whole range, so merging them (without their keys of {@code T})
 *       with the present keys of {@code T} gives the first {@code L} exactly. Ranges share one limit per index
 *       call, so they are grouped by the power of two above {@code L + c}: usually one call, at most 32, and
 *       never more than twice the pairs needed. A batch that deletes many keys that are in the index and also
 *       asks wide ranges reads up to {@code L + c} pairs per range, where sequential execution would read
 *       {@code L}: the price of one bulk call instead of a call per update/lookup alternation.</li>
 *   <li><b>Net effect</b>: one sorted bulk upsert of the keys whose last update is an upsert (with that value),
 *       one sorted bulk delete of the keys whose last update is a delete.</li>
 * </ol>
 * A batch of upserts only (or deletes only) needs none of this: it goes to the index as it is, in one unsorted
 * call, whose own sort and last-occurrence-wins rule ({@link FlixIndex}) give the same net effect. The index sorts
 * where it sorts best (the GPU backend on the device, the CPU backend on its worker threads), which keeps a bulk
 * load off the calling thread's single-threaded sort.
 * A batch without ordered lookups goes to the index as {@link Sorting} says, both ways with the same answers and
 * the same final state: through the host sort above ({@link Sorting#HOST_SORT}: the engine's single-threaded sort,
 * then sorted calls of the distinct keys), or unsorted ({@link Sorting#INDEX_SORT}: the index sorts, the GPU backend
 * on the device, the CPU backend on its worker threads). With {@link Sorting#INDEX_SORT}, a batch of gets only goes
 * as it is in one unsorted get, and so does a batch of ceilings only, or of floors only, whose answers land by batch
 * position. A batch of gets and updates is walked once in arrival order over an {@link UpdateOverlay}, a hash table
 * of the keys updated so far with their current values: a get of such a key takes its value there, the other gets
 * go to the index in one unsorted get of the pre-batch state, and the overlay's entries are the net effect, written
 * as one unsorted upsert and one unsorted delete. By default each backend takes the faster, measured end to end at
 * the operator's batch sizes 2^14 to 2^17 (Bench's micro-batch latency table, {@code engine_*} rows): for both
 * backends the unsorted calls, on the GPU by far (the host sort takes longer than the whole device call).
 * So a batch makes at most one call each of get, ceiling, floor, upsert and delete, and a few range calls (one per
 * group above); a batch of only updates and gets makes at most one get, one upsert and one delete call; an empty
 * batch makes none. Lookups run before the updates: if the index throws during the final writes, the results are
 * lost and the batch is partly applied (upserts before deletes), as with any failing bulk call.
 *
 * <p>Work is linear in the batch apart from the sorts (radix) and binary searches over {@code T}; scratch arrays
 * and the returned {@link BatchResults} are reused across calls.
 *
 * <h2>Threads</h2>
 * An engine serves one thread at a time: it works in its own scratch and returns its own results buffer, so
 * {@link #execute} refuses with {@link IllegalStateException} a call made while another thread's call on the same
 * engine runs (results stay valid only until the engine's next call, whichever thread makes it). Several threads
 * share one index through one engine each: the index answers concurrent lookups ({@link FlixIndex}). Each index
 * call sees one state of the index, but a batch makes several calls: its lookups (the bulk get, ordered lookups,
 * ranges), then its net effect as one upsert and one delete. So while one thread's batch runs, another thread's
 * lookups may see the index between its upsert and its delete, and its own lookups may see updates that another
 * thread makes between two of its calls. Each answer is that of a state the index held, but batches of several
 * threads together are not one-at-a-time execution of all their operations: where that matters, the caller
 * orders them (for example, one thread runs the batches that update, and holds off the others' lookups while its
 * net effect is written).
 */
public final class MicroBatchEngine {

    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;
    /** Range groups: one per power of two of the pairs a range asks the index for. */
    private static final int RANGE_CLASSES = 32;

    private final FlixIndex index;
    /** The thread whose call runs now, null between calls: a second thread's call is refused, not run. */
    private final AtomicReference<Thread> runningOn = new AtomicReference<>();
    private final KeySorter sorter = new KeySorter();
    private final BatchResults results = new BatchResults();
    /** Bit j: key {@code tKeys[j]} is present at the current point of the arrival-order pass. */
    private final BitSet present = new BitSet();

    // Exact operations (upsert, delete, get), then sorted by key.
    private long[] exactKeys = new long[0];
    private int[] exactPositions = new int[0];
    private long[] sortedKeys = new long[0];
    private int[] permutation = new int[0];
    private int[] sortedPositions = new int[0];
    /** Per key run: index into {@code preKeys}, or -1 when its pre-batch value is not needed. */
    private int[] runPre = new int[0];

    // Keys read from the pre-batch index by the one bulk get.
    private long[] preKeys = new long[0];
    private long[] preValues = new long[0];

    // T: the distinct updated keys, ascending.
    private long[] tKeys = new long[0];
    /** Position of the last update of each key of T: its net effect. */
    private int[] tLastPosition = new int[0];
    /** Index into {@code preKeys} of each key of T (ordered lookups only). */
    private int[] tPre = new int[0];
    /** Current value of each key of T during the arrival-order pass. */
    private long[] tValue = new long[0];
    /** Per key of T in P: the nearest key of {@code P \ T} beyond it (above for ceiling, below for floor). */
    private long[] tBeyondKey = new long[0];
    private long[] tBeyondValue = new long[0];
    /** Whether the batch deletes each key of T somewhere (ordered lookups only). */
    private boolean[] tDeleted = new boolean[0];
    /**
     * Whether each key of T is in P and deleted somewhere in the batch: only these can be missing from the state
     * a lookup sees while being in P. (A key of P that the batch only upserts is present throughout.)
     */
    private boolean[] tDroppable = new boolean[0];
    /** {@code tDroppablePrefix[j]}: droppable keys of T below index j. */
    private int[] tDroppablePrefix = new int[0];
    /** Per update operation position: its key's index in T (ordered lookups only). */
    private int[] opT = new int[0];

    // Ordered lookups: per operation position, the answer from P \ T.
    private long[] beyondKey = new long[0];
    private long[] beyondValue = new long[0];
    private long[] lookupKeys = new long[0];
    private int[] lookupPositions = new int[0];
    private long[] lookupSorted = new long[0];
    private int[] lookupPermutation = new int[0];
    private long[] queryKeys = new long[0];
    /** Per query: the lookup's position if {@code >= 0}, else {@code -(j + 1)} for the gap query of {@code tKeys[j]}. */
    private int[] queryOwner = new int[0];
    private long[] queryOutKeys = new long[0];
    private long[] queryOutValues = new long[0];

    // Ranges, in arrival order: group (class) and slot in the group's call.
    private int[] rangeClass = new int[0];
    private int[] rangeSlot = new int[0];
    private int[] rangeNeed = new int[0];
    private long[] rangeLo = new long[0];
    private long[] rangeHi = new long[0];
    private final RangeResult[] classResults = new RangeResult[RANGE_CLASSES];
    /** The last result of each range group, whose arrays the group's next call reuses. */
    private final RangeResult[] classReuse = new RangeResult[RANGE_CLASSES];
    private final int[] classCount = new int[RANGE_CLASSES];
    private final int[] classLimit = new int[RANGE_CLASSES];

    // Net effect.
    private long[] upsertKeys = new long[0];
    private long[] upsertValues = new long[0];
    private long[] deleteKeys = new long[0];
    private int netUpserts;
    private int netDeletes;

    /** Who sorts a batch without ordered lookups: the engine, or the index it calls. */
    public enum Sorting {
        /** The engine, on the calling thread: sorted calls of the batch's distinct keys. */
        HOST_SORT,
        /**
         * The index: gets only, ceilings only or floors only go as they are in one unsorted call; gets and updates in
         * one pass over an {@link UpdateOverlay}, then unsorted calls. The GPU backend sorts on the device.
         */
        INDEX_SORT;

        /** The faster of the two for the index's backend, measured end to end (see the class documentation). */
        public static Sorting fasterFor(Backend backend) {
            return switch (backend) {
                case GPU, CPU -> INDEX_SORT;
                default -> HOST_SORT;
            };
        }
    }

    private final Sorting sorting;
    /** The updates of a batch without ordered lookups, walked in arrival order ({@link Sorting#INDEX_SORT}). */
    private final UpdateOverlay overlay = new UpdateOverlay();

    /** An engine whose batches without ordered lookups go as {@link Sorting#fasterFor} its index's backend says. */
    public MicroBatchEngine(FlixIndex index) {
        this(index, index == null ? null : Sorting.fasterFor(index.backend()));
    }

    /** An engine whose batches without ordered lookups go to the index as {@code sorting} says. */
    public MicroBatchEngine(FlixIndex index, Sorting sorting) {
        if (index == null) {
            throw new IllegalArgumentException("index must not be null");
        }
        if (sorting == null) {
            throw new IllegalArgumentException("sorting must not be null");
        }
        this.index = index;
        this.sorting = sorting;
    }

    public FlixIndex index() {
        return index;
    }

    /** Who sorts this engine's batches without ordered lookups. */
    public Sorting sorting() {
        return sorting;
    }

    /**
     * Runs the batch on the index. The batch is not modified (clear it for reuse). The returned results are
     * this engine's reusable buffer: valid until the next call.
     *
     * @throws IllegalStateException where another thread's call on this engine is running (see Threads above)
     */
    public BatchResults execute(OperationBatch batch) {
        if (batch == null) {
            throw new IllegalArgumentException("batch must not be null");
        }
        final Thread caller = Thread.currentThread();
        if (!runningOn.compareAndSet(null, caller)) {
            final Thread other = runningOn.get();
            throw new IllegalStateException("this MicroBatchEngine is running a batch of thread "
                    + (other == null ? "(just ended)" : "'" + other.getName() + "'") + "; thread '"
                    + caller.getName() + "' must use an engine of its own: an engine serves one thread at a time");
        }
        try {
            return executeAlone(batch);
        } finally {
            runningOn.set(null);
        }
    }

    private BatchResults executeAlone(OperationBatch batch) {
        results.reset(batch);
        final int n = batch.size;
        if (n == 0) {
            return results;
        }
        final int[] counts = batch.kindCounts;
        if (counts[OperationBatch.UPSERT] == n) {
            index.upsert(batch.keys, batch.values, n, false);
            return results;
        }
        if (counts[OperationBatch.DELETE] == n) {
            index.delete(batch.keys, n, false);
            return results;
        }
        final int exactCount = counts[OperationBatch.UPSERT] + counts[OperationBatch.DELETE]
                + counts[OperationBatch.GET];
        final boolean ordered = counts[OperationBatch.CEILING] + counts[OperationBatch.FLOOR]
                + counts[OperationBatch.RANGE] > 0;
        if (sorting == Sorting.INDEX_SORT) {
            // one lookup kind only: its answers depend on the index alone, one unsorted call gives them in place
            if (counts[OperationBatch.GET] == n) {
                index.get(batch.keys, n, results.valuesByPosition(), false);
                return results;
            }
            if (counts[OperationBatch.CEILING] == n) {
                index.ceiling(batch.keys, n, results.keysByPosition(), results.valuesByPosition(), false);
                return results;
            }
            if (counts[OperationBatch.FLOOR] == n) {
                index.floor(batch.keys, n, results.keysByPosition(), results.valuesByPosition(), false);
                return results;
            }
            final int updates = counts[OperationBatch.UPSERT] + counts[OperationBatch.DELETE];
            if (!ordered && updates <= UpdateOverlay.MAX_UPDATES) {
                runExactInArrivalOrder(batch, updates);
                return results;
            }
        }

        final int tCount = sortExactAndFindUpdatedKeys(batch, exactCount, ordered);
        answerExactLookups(batch, exactCount);
        if (ordered) {
            answerOrderedLookups(batch, tCount);
        }
        applyNetEffect(batch, tCount);
        return results;
    }

    /**
     * A batch of gets and updates without a sort ({@link Sorting#INDEX_SORT}): one pass in arrival order keeps each
     * updated key's current value in the overlay; a get of such a key takes it from there, any other get reads the
     * pre-batch index, all of those in one unsorted get. Then the overlay's entries, each key once, are the net
     * effect: one unsorted upsert, one unsorted delete.
     */
    private void runExactInArrivalOrder(OperationBatch batch, int updates) {
        final int n = batch.size;
        final byte[] kinds = batch.kinds;
        final long[] keys = batch.keys;
        final long[] values = batch.values;
        final int gets = batch.kindCounts[OperationBatch.GET];
        overlay.reset(updates);
        // the gets that read the pre-batch index, and their positions
        preKeys = ensure(preKeys, gets);
        exactPositions = ensure(exactPositions, gets);
        int reads = 0;
        for (int i = 0; i < n; i++) {
            final long key = keys[i];
            switch (kinds[i]) {
                case OperationBatch.UPSERT -> overlay.put(key, values[i]);
                case OperationBatch.DELETE -> overlay.put(key, NOT_FOUND);
                default -> { // get
                    final int entry = overlay.entryOf(key);
                    if (entry >= 0) {
                        results.setValue(i, overlay.value(entry));
                    } else {
                        preKeys[reads] = key;
                        exactPositions[reads] = i;
                        reads++;
                    }
                }
            }
        }
        if (reads > 0) {
            preValues = ensure(preValues, reads);
            index.get(preKeys, reads, preValues, false);
            for (int r = 0; r < reads; r++) {
                results.setValue(exactPositions[r], preValues[r]);
            }
        }
        final int updated = overlay.size();
        startNetEffect(updated);
        for (int e = 0; e < updated; e++) {
            addNetEffect(overlay.key(e), overlay.value(e));
        }
        writeNetEffect(false);
    }

    /**
     * Sorts the exact operations by key, collects T and the keys whose pre-batch values are needed, and reads
     * those values with one bulk get.
     *
     * @return the number of keys in T
     */
    private int sortExactAndFindUpdatedKeys(OperationBatch batch, int m, boolean ordered) {
        final int n = batch.size;
        final byte[] kinds = batch.kinds;
        final long[] keys = batch.keys;
        exactKeys = ensure(exactKeys, m);
        exactPositions = ensure(exactPositions, m);
        int e = 0;
        for (int i = 0; i < n; i++) {
            if (kinds[i] <= OperationBatch.GET) {
                exactKeys[e] = keys[i];
                exactPositions[e] = i;
                e++;
            }
        }
        sortedKeys = ensure(sortedKeys, m);
        permutation = ensure(permutation, m);
        sortedPositions = ensure(sortedPositions, m);
        if (m > 0) {
            sorter.sort(exactKeys, m, sortedKeys, permutation);
        }
        for (int s = 0; s < m; s++) {
            sortedPositions[s] = exactPositions[permutation[s]];
        }

        runPre = ensure(runPre, m);
        preKeys = ensure(preKeys, m);
        tKeys = ensure(tKeys, m);
        tLastPosition = ensure(tLastPosition, m);
        if (ordered) {
            tPre = ensure(tPre, m);
            tDeleted = ensure(tDeleted, m);
            opT = ensure(opT, n);
        }
        int tCount = 0;
        int preCount = 0;
        int run = 0;
        for (int s = 0; s < m; ) {
            final long key = sortedKeys[s];
            int lastUpdate = -1;
            boolean getBeforeUpdate = false;
            boolean deleted = false;
            int end = s;
            do {
                final int position = sortedPositions[end];
                if (kinds[position] == OperationBatch.GET) {
                    getBeforeUpdate |= lastUpdate < 0;
                } else {
                    lastUpdate = position;
                    deleted |= kinds[position] == OperationBatch.DELETE;
                    if (ordered) {
                        opT[position] = tCount; // this key's index in T, assigned below
                    }
                }
                end++;
            } while (end < m && sortedKeys[end] == key);
            final boolean updated = lastUpdate >= 0;
            int pre = -1;
            if (getBeforeUpdate || (ordered && updated)) {
                preKeys[preCount] = key;
                pre = preCount++;
            }
            runPre[run++] = pre;
            if (updated) {
                tKeys[tCount] = key;
                tLastPosition[tCount] = lastUpdate;
                if (ordered) {
                    tPre[tCount] = pre;
                    tDeleted[tCount] = deleted;
                }
                tCount++;
            }
            s = end;
        }
        preValues = ensure(preValues, preCount);
        if (preCount > 0) {
            index.get(preKeys, preCount, preValues, true);
        }
        return tCount;
    }

    /** Walks each key's run in arrival order: a get sees the pre-batch value or the preceding update. */
    private void answerExactLookups(OperationBatch batch, int m) {
        final byte[] kinds = batch.kinds;
        final long[] values = batch.values;
        int run = 0;
        for (int s = 0; s < m; ) {
            final long key = sortedKeys[s];
            final int pre = runPre[run++];
            long current = pre >= 0 ? preValues[pre] : NOT_FOUND;
            do {
                final int position = sortedPositions[s];
                switch (kinds[position]) {
                    case OperationBatch.GET -> results.setValue(position, current);
                    case OperationBatch.UPSERT -> current = values[position];
                    default -> current = NOT_FOUND; // delete
                }
                s++;
            } while (s < m && sortedKeys[s] == key);
        }
    }

    private void answerOrderedLookups(OperationBatch batch, int tCount) {
        final int n = batch.size;
        tValue = ensure(tValue, tCount);
        tDroppable = ensure(tDroppable, tCount);
        tDroppablePrefix = ensure(tDroppablePrefix, tCount + 1);
        present.clear();
        tDroppablePrefix[0] = 0;
        for (int j = 0; j < tCount; j++) {
            final long v = preValues[tPre[j]];
            tValue[j] = v;
            final boolean inP = v != NOT_FOUND;
            if (inP) {
                present.set(j);
            }
            tDroppable[j] = inP && tDeleted[j];
            tDroppablePrefix[j + 1] = tDroppablePrefix[j] + (tDroppable[j] ? 1 : 0);
        }
        beyondKey = ensure(beyondKey, n);
        beyondValue = ensure(beyondValue, n);
        if (batch.kindCounts[OperationBatch.CEILING] > 0) {
            lookOutsideT(batch, OperationBatch.CEILING, tCount);
        }
        if (batch.kindCounts[OperationBatch.FLOOR] > 0) {
            lookOutsideT(batch, OperationBatch.FLOOR, tCount);
        }
        if (batch.kindCounts[OperationBatch.RANGE] > 0) {
            readRanges(batch, tCount);
        }
        mergeInArrivalOrder(batch, tCount);
    }

    /**
     * For every ceiling (or floor) of the batch, finds the answer within {@code P \ T} with one sorted bulk call:
     * the lookups' keys merged with a gap key next to each key of T that is in P.
     */
    private void lookOutsideT(OperationBatch batch, byte kind, int tCount) {
        final boolean up = kind == OperationBatch.CEILING;
        final int n = batch.size;
        final int count = batch.kindCounts[kind];
        lookupKeys = ensure(lookupKeys, count);
        lookupPositions = ensure(lookupPositions, count);
        int c = 0;
        for (int i = 0; i < n; i++) {
            if (batch.kinds[i] == kind) {
                lookupKeys[c] = batch.keys[i];
                lookupPositions[c] = i;
                c++;
            }
        }
        lookupSorted = ensure(lookupSorted, count);
        lookupPermutation = ensure(lookupPermutation, count);
        sorter.sort(lookupKeys, count, lookupSorted, lookupPermutation);

        // Merge the sorted lookup keys with the gap keys t + 1 (or t - 1), which ascend with j.
        final int maxQueries = count + tCount;
        queryKeys = ensure(queryKeys, maxQueries);
        queryOwner = ensure(queryOwner, maxQueries);
        int q = 0;
        int s = 0;
        int j = nextGap(-1, tCount, up);
        while (s < count || j < tCount) {
            final long gapKey = j < tCount ? (up ? tKeys[j] + 1 : tKeys[j] - 1) : 0;
            if (j >= tCount || (s < count && lookupSorted[s] <= gapKey)) {
                queryKeys[q] = lookupSorted[s];
                queryOwner[q] = lookupPositions[lookupPermutation[s]];
                s++;
            } else {
                queryKeys[q] = gapKey;
                queryOwner[q] = -(j + 1);
                j = nextGap(j, tCount, up);
            }
            q++;
        }
        queryOutKeys = ensure(queryOutKeys, q);
        queryOutValues = ensure(queryOutValues, q);
        if (up) {
            index.ceiling(queryKeys, q, queryOutKeys, queryOutValues, true);
        } else {
            index.floor(queryKeys, q, queryOutKeys, queryOutValues, true);
        }

        // Gap answers: the nearest key of P beyond t; if that key is itself in T, chain to its own answer.
        tBeyondKey = ensure(tBeyondKey, tCount);
        tBeyondValue = ensure(tBeyondValue, tCount);
        for (int t = 0; t < tCount; t++) {
            tBeyondValue[t] = NOT_FOUND;
            tBeyondKey[t] = 0;
        }
        for (int i = 0; i < q; i++) {
            final int owner = queryOwner[i];
            if (owner < 0) {
                tBeyondKey[-owner - 1] = queryOutKeys[i];
                tBeyondValue[-owner - 1] = queryOutValues[i];
            }
        }
        // Chains run away from t: resolve the far end first (right to left for ceiling, left to right for floor).
        for (int step = 0; step < tCount; step++) {
            final int t = up ? tCount - 1 - step : step;
            if (tBeyondValue[t] == NOT_FOUND) {
                continue;
            }
            final int inT = up ? indexOf(tKeys, t + 1, tCount, tBeyondKey[t]) : indexOf(tKeys, 0, t, tBeyondKey[t]);
            if (inT >= 0 && tDroppable[inT]) {
                tBeyondKey[t] = tBeyondKey[inT];
                tBeyondValue[t] = tBeyondValue[inT];
            }
        }
        for (int i = 0; i < q; i++) {
            final int position = queryOwner[i];
            if (position < 0) {
                continue;
            }
            long k = queryOutKeys[i];
            long v = queryOutValues[i];
            if (v != NOT_FOUND) {
                final int inT = indexOf(tKeys, 0, tCount, k);
                if (inT >= 0 && tDroppable[inT]) {
                    k = tBeyondKey[inT];
                    v = tBeyondValue[inT];
                }
            }
            beyondKey[position] = k;
            beyondValue[position] = v;
        }
    }

    /** The next j after {@code j} whose key is droppable and has a neighbour on the lookup's side. */
    private int nextGap(int j, int tCount, boolean up) {
        final long edge = up ? Long.MAX_VALUE : Long.MIN_VALUE;
        for (j++; j < tCount; j++) {
            if (tDroppable[j] && tKeys[j] != edge) {
                return j;
            }
        }
        return tCount;
    }

    /** Reads each range from P with room for the keys of T it will drop, grouped into calls by that room. */
    private void readRanges(OperationBatch batch, int tCount) {
        final int n = batch.size;
        final int count = batch.kindCounts[OperationBatch.RANGE];
        rangeClass = ensure(rangeClass, count);
        rangeSlot = ensure(rangeSlot, count);
        rangeNeed = ensure(rangeNeed, count);
        java.util.Arrays.fill(classCount, 0);
        java.util.Arrays.fill(classLimit, 0);
        int r = 0;
        for (int i = 0; i < n; i++) {
            if (batch.kinds[i] != OperationBatch.RANGE) {
                continue;
            }
            final int from = lowerBound(tKeys, tCount, batch.keys[i]);
            final int to = upperBound(tKeys, tCount, batch.values[i]);
            final int dropped = tDroppablePrefix[to] - tDroppablePrefix[from];
            final int need = (int) Math.min(Integer.MAX_VALUE, (long) batch.limits[i] + dropped);
            final int cls = RANGE_CLASSES - Integer.numberOfLeadingZeros(need - 1);
            rangeNeed[r] = need;
            rangeClass[r] = cls;
            rangeSlot[r] = classCount[cls]++;
            classLimit[cls] = Math.max(classLimit[cls], need);
            r++;
        }
        rangeLo = ensure(rangeLo, count);
        rangeHi = ensure(rangeHi, count);
        for (int cls = 0; cls < RANGE_CLASSES; cls++) {
            classResults[cls] = null;
            if (classCount[cls] == 0) {
                continue;
            }
            int at = 0;
            r = 0;
            for (int i = 0; i < n; i++) {
                if (batch.kinds[i] == OperationBatch.RANGE) {
                    if (rangeClass[r] == cls) {
                        rangeLo[at] = batch.keys[i];
                        rangeHi[at] = batch.values[i];
                        at++;
                    }
                    r++;
                }
            }
            classResults[cls] = index.range(rangeLo, rangeHi, at, classLimit[cls], classReuse[cls]);
            classReuse[cls] = classResults[cls];
        }
    }

    /**
     * The arrival-order pass: applies each update to the view of T and answers each ordered lookup by merging the
     * answer from {@code P \ T} with the keys of T present at that point.
     */
    private void mergeInArrivalOrder(OperationBatch batch, int tCount) {
        final int n = batch.size;
        final byte[] kinds = batch.kinds;
        final long[] keys = batch.keys;
        final long[] values = batch.values;
        int range = 0;
        for (int i = 0; i < n; i++) {
            switch (kinds[i]) {
                case OperationBatch.UPSERT -> {
                    final int t = opT[i];
                    present.set(t);
                    tValue[t] = values[i];
                }
                case OperationBatch.DELETE -> present.clear(opT[i]);
                case OperationBatch.CEILING -> {
                    final int from = lowerBound(tKeys, tCount, keys[i]);
                    final int t = present.nextSetBit(from);
                    final long bv = beyondValue[i];
                    if (t >= 0 && (bv == NOT_FOUND || tKeys[t] <= beyondKey[i])) {
                        results.setPair(i, tKeys[t], tValue[t]);
                    } else {
                        results.setPair(i, bv == NOT_FOUND ? 0 : beyondKey[i], bv);
                    }
                }
                case OperationBatch.FLOOR -> {
                    final int to = upperBound(tKeys, tCount, keys[i]) - 1;
                    final int t = to >= 0 ? present.previousSetBit(to) : -1;
                    final long bv = beyondValue[i];
                    if (t >= 0 && (bv == NOT_FOUND || tKeys[t] >= beyondKey[i])) {
                        results.setPair(i, tKeys[t], tValue[t]);
                    } else {
                        results.setPair(i, bv == NOT_FOUND ? 0 : beyondKey[i], bv);
                    }
                }
                case OperationBatch.RANGE -> mergeRange(batch, i, range++, tCount);
                default -> {
                    // get: answered from the key runs
                }
            }
        }
    }

    private void mergeRange(OperationBatch batch, int position, int range, int tCount) {
        final long lo = batch.keys[position];
        final long hi = batch.values[position];
        final int limit = batch.limits[position];
        final RangeResult fromP = classResults[rangeClass[range]];
        final int slot = rangeSlot[range];
        final long[] pKeys = fromP.keys();
        final long[] pValues = fromP.values();
        int p = fromP.offsets()[slot];
        final int pEnd = fromP.offsets()[slot + 1];
        int member = lowerBound(tKeys, tCount, lo); // finds P's keys that are in T: the T side answers for them
        int t = present.nextSetBit(member);
        if (t >= 0 && tKeys[t] > hi) {
            t = -1;
        }
        results.beginRange(position);
        for (int emitted = 0; emitted < limit; emitted++) {
            while (p < pEnd) {
                final long k = pKeys[p];
                member = SortedSearch.lowerBound(tKeys, member, tCount, k);
                if (member < tCount && tKeys[member] == k) {
                    p++;
                } else {
                    break;
                }
            }
            final boolean haveP = p < pEnd;
            if (t >= 0 && (!haveP || tKeys[t] < pKeys[p])) {
                results.appendRangePair(position, tKeys[t], tValue[t]);
                t = present.nextSetBit(t + 1);
                if (t >= 0 && tKeys[t] > hi) {
                    t = -1;
                }
            } else if (haveP) {
                results.appendRangePair(position, pKeys[p], pValues[p]);
                p++;
            } else {
                break;
            }
        }
    }

    /** One sorted upsert of the keys whose last update is an upsert, one sorted delete of the others. */
    private void applyNetEffect(OperationBatch batch, int tCount) {
        startNetEffect(tCount);
        for (int j = 0; j < tCount; j++) {
            final int position = tLastPosition[j];
            addNetEffect(tKeys[j], batch.kinds[position] == OperationBatch.UPSERT ? batch.values[position] : NOT_FOUND);
        }
        writeNetEffect(true);
    }

    /** Empties the net effect, with room for {@code keys} updated keys. */
    private void startNetEffect(int keys) {
        upsertKeys = ensure(upsertKeys, keys);
        upsertValues = ensure(upsertValues, keys);
        deleteKeys = ensure(deleteKeys, keys);
        netUpserts = 0;
        netDeletes = 0;
    }

    /** A key's last update: an upsert of {@code value}, or a delete where it is {@code NOT_FOUND}. */
    private void addNetEffect(long key, long value) {
        if (value != NOT_FOUND) {
            upsertKeys[netUpserts] = key;
            upsertValues[netUpserts] = value;
            netUpserts++;
        } else {
            deleteKeys[netDeletes++] = key;
        }
    }

    /** One upsert, then one delete, of the net effect gathered. */
    private void writeNetEffect(boolean keysSorted) {
        if (netUpserts > 0) {
            index.upsert(upsertKeys, upsertValues, netUpserts, keysSorted);
        }
        if (netDeletes > 0) {
            index.delete(deleteKeys, netDeletes, keysSorted);
        }
    }

    /** First index in {@code a[0..n)} with {@code a[i] >= key}. */
    private static int lowerBound(long[] a, int n, long key) {
        return SortedSearch.lowerBound(a, 0, n, key);
    }

    /** First index in {@code a[0..n)} with {@code a[i] > key}. */
    private static int upperBound(long[] a, int n, long key) {
        return SortedSearch.upperBound(a, 0, n, key);
    }

    /** Index of {@code key} in the ascending {@code a[from..to)}, or -1. */
    private static int indexOf(long[] a, int from, int to, long key) {
        final int i = java.util.Arrays.binarySearch(a, from, to, key);
        return i >= 0 ? i : -1;
    }

    private static long[] ensure(long[] a, int n) {
        return a.length >= n ? a : new long[Math.max(n, (int) Math.min(Integer.MAX_VALUE - 8, 2L * a.length))];
    }

    private static boolean[] ensure(boolean[] a, int n) {
        return a.length >= n ? a : new boolean[Math.max(n, (int) Math.min(Integer.MAX_VALUE - 8, 2L * a.length))];
    }

    private static int[] ensure(int[] a, int n) {
        return a.length >= n ? a : new int[Math.max(n, (int) Math.min(Integer.MAX_VALUE - 8, 2L * a.length))];
    }
}
