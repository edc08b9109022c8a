package io.flix.index.cpu;

import io.flix.index.BatchArgs;
import io.flix.index.FlixIndex;

import java.util.Arrays;
import java.util.function.IntConsumer;

/**
 * A batch of a {@link ShardedCpuIndex} cut into one part per key range (shard), each part in batch order (so that the
 * last occurrence of a key still wins in its shard), with each key's batch position where a lookup needs to put its
 * answer back: scratch kept between calls up to {@value CpuFlixIndex#SCRATCH_KEPT} keys.
 */
final class ShardParts {

    /** Runs numbered pieces of work {@code 0..pieces-1}, possibly at once. */
    @FunctionalInterface
    interface Runner {
        void run(int pieces, IntConsumer body);
    }

    /**
     * Most keys the parts keep room for between calls: a batch of {@link CpuFlixIndex#SCRATCH_KEPT} keys, with the
     * eighth each part is sized above its need and what its share varies from batch to batch, so that a load of such
     * batches reuses the parts instead of allocating (and zeroing) them on the calling thread each time.
     */
    static final long PARTS_KEPT = CpuFlixIndex.SCRATCH_KEPT + CpuFlixIndex.SCRATCH_KEPT / 2;

    int shards;
    int[] count = new int[0];
    int[] route = new int[0];
    int[][] chunkCounts = new int[0][];
    long[][] keys = new long[0][];
    /** Update values, or the answers' values of a lookup. */
    long[][] values = new long[0][];
    /** The answers' keys of a floor or ceiling. */
    long[][] answerKeys = new long[0][];
    int[][] positions = new int[0][];
    private boolean withValues;
    private boolean withPositions;

    void begin(int shardCount, int n, int chunks, boolean values, boolean positions) {
        shards = shardCount;
        withValues = values;
        withPositions = positions;
        if (count.length < shardCount) {
            count = new int[shardCount];
            keys = Arrays.copyOf(keys, shardCount);
            this.values = Arrays.copyOf(this.values, shardCount);
            answerKeys = Arrays.copyOf(answerKeys, shardCount);
            this.positions = Arrays.copyOf(this.positions, shardCount);
        }
        if (route.length < n) {
            route = new int[n];
        }
        if (chunkCounts.length < chunks || (chunks > 0 && chunkCounts[0].length < shardCount)) {
            chunkCounts = new int[Math.max(chunks, chunkCounts.length)][shardCount];
        }
        for (int c = 0; c < chunks; c++) {
            Arrays.fill(chunkCounts[c], 0, shardCount, 0);
        }
    }

    /** Room for every part's keys (values, positions) as counted. */
    void ensureParts() {
        for (int s = 0; s < shards; s++) {
            final int need = count[s];
            keys[s] = fit(keys[s], need);
            if (withValues || withPositions) { // a lookup's answers go into values
                values[s] = fit(values[s], need);
            }
            if (withPositions) {
                positions[s] = positions[s] == null || positions[s].length < need
                        ? new int[grown(need)] : positions[s];
            }
        }
    }

    void ensureAnswers(boolean answerKeysToo) {
        if (answerKeysToo) {
            for (int s = 0; s < shards; s++) {
                answerKeys[s] = fit(answerKeys[s], count[s]);
            }
        }
    }

    private static long[] fit(long[] a, int need) {
        return a == null || a.length < need ? new long[grown(need)] : a;
    }

    private static int grown(int need) {
        return (int) Math.min(Integer.MAX_VALUE - 8, need + (long) need / 8);
    }

    /** Lets go of scratch beyond what is kept between calls. */
    void trim() {
        if (route.length > CpuFlixIndex.SCRATCH_KEPT) {
            route = new int[0];
        }
        long held = 0;
        for (int s = 0; s < keys.length; s++) {
            held += keys[s] == null ? 0 : keys[s].length;
        }
        if (held > PARTS_KEPT) {
            Arrays.fill(keys, null);
            Arrays.fill(values, null);
            Arrays.fill(answerKeys, null);
            Arrays.fill(positions, null);
        }
    }

    /**
     * Cuts {@code keys[0, n)} (with {@code values} where not null, and the batch positions where asked) into one part
     * per range of {@code ranges}, each in batch order: counted per chunk, then scattered per chunk to offsets taken
     * in chunk order, the chunks run by {@code runner}.
     */
    void cut(RangeRouter ranges, long[] keys, long[] values, int n, boolean positions, int chunks, Runner runner) {
        cut(ranges, keys, values, n, positions, chunks, runner, false);
    }

    /**
     * As {@link #cut(RangeRouter, long[], long[], int, boolean, int, Runner)}; where {@code checkValues}, the count
     * pass also finds the first value that is {@link FlixIndex#NOT_FOUND} and throws {@link BatchArgs#reservedValue}
     * for it before any part is written.
     */
    void cut(RangeRouter ranges, long[] keys, long[] values, int n, boolean positions, int chunks, Runner runner,
             boolean checkValues) {
        final int parts = ranges.shards();
        begin(parts, n, chunks, values != null, positions);
        final int[] route = this.route;
        final boolean check = checkValues && values != null;
        final int[] reservedAt = new int[check ? chunks : 0];
        // Each chunk counts and scatters with counters of its own, copied in and out once: the chunks' rows of
        // chunkCounts share cache lines, and threads writing them key by key would take the lines from each other.
        runner.run(chunks, c -> {
            final int[] counts = new int[parts];
            int reserved = -1;
            for (int i = (int) ((long) n * c / chunks), to = (int) ((long) n * (c + 1) / chunks); i < to; i++) {
                final int s = ranges.shardOf(keys[i]);
                route[i] = s;
                counts[s]++;
                if (check && reserved < 0 && values[i] == FlixIndex.NOT_FOUND) {
                    reserved = i;
                }
            }
            System.arraycopy(counts, 0, chunkCounts[c], 0, parts);
            if (check) {
                reservedAt[c] = reserved;
            }
        });
        for (int at : reservedAt) {
            if (at >= 0) {
                throw BatchArgs.reservedValue(at); // chunks in batch order: the first found is the batch's first
            }
        }
        for (int s = 0; s < parts; s++) {
            int total = 0;
            for (int c = 0; c < chunks; c++) {
                final int inChunk = chunkCounts[c][s];
                chunkCounts[c][s] = total;
                total += inChunk;
            }
            count[s] = total;
        }
        ensureParts();
        runner.run(chunks, c -> {
            final int[] next = Arrays.copyOf(chunkCounts[c], parts);
            for (int i = (int) ((long) n * c / chunks), to = (int) ((long) n * (c + 1) / chunks); i < to; i++) {
                final int s = route[i];
                final int j = next[s]++;
                this.keys[s][j] = keys[i];
                if (values != null) {
                    this.values[s][j] = values[i];
                }
                if (positions) {
                    this.positions[s][j] = i;
                }
            }
        });
    }
}
