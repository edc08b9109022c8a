package io.flix.flink.payload;

import io.flix.index.FlixIndex;
import io.flix.index.batch.BatchResults;
import io.flix.index.batch.OperationBatch;

import java.util.Arrays;

/**
 * The updates of one micro-batch over a {@link RowStore}: the index maps a key to its row id, so each upsert or
 * delete is preceded in the batch by a get of its key, whose answer is the row it supersedes; once the batch ran,
 * {@link #releaseSuperseded} returns those rows to the store. Not thread-safe: one per batch owner.
 */
public final class RowUpdates {

    private final RowStore rows;
    private int[] getPositions;
    private int count;

    public RowUpdates(RowStore rows, int initialCapacity) {
        this.rows = rows;
        this.getPositions = new int[Math.max(1, initialCapacity)];
    }

    private RowUpdates(RowStore rows, int[] getPositions, int count) {
        this.rows = rows;
        this.getPositions = getPositions;
        this.count = count;
    }

    /**
     * The updates added since the last seal or release, for {@link #releaseSuperseded} once their batch ran; this one
     * goes on with none, for the next batch.
     */
    public RowUpdates seal() {
        final RowUpdates sealed = new RowUpdates(rows, Arrays.copyOf(getPositions, Math.max(1, count)), count);
        count = 0;
        return sealed;
    }

    /** Adds an upsert of {@code key} to {@code row} (a row of the store) to the batch. */
    public void upsert(OperationBatch batch, long key, int row) {
        recordGet(batch.get(key));
        batch.upsert(key, row);
    }

    /** Adds a delete of {@code key} to the batch. */
    public void delete(OperationBatch batch, long key) {
        recordGet(batch.get(key));
        batch.delete(key);
    }

    /** Updates added since the last {@link #releaseSuperseded}. */
    public int size() {
        return count;
    }

    /** Frees the rows the batch's updates replaced or deleted, and forgets the updates. */
    public void releaseSuperseded(BatchResults results) {
        for (int u = 0; u < count; u++) {
            final long superseded = results.value(getPositions[u]);
            if (superseded != FlixIndex.NOT_FOUND) {
                rows.free((int) superseded);
            }
        }
        count = 0;
    }

    /** Forgets the updates without freeing anything: their batch was cleared without running. */
    public void discard() {
        count = 0;
    }

    private void recordGet(int position) {
        if (count == getPositions.length) {
            getPositions = Arrays.copyOf(getPositions, count * 2);
        }
        getPositions[count++] = position;
    }
}
