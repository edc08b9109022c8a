package io.flix.index.batch;

import java.util.function.IntConsumer;

/**
 * Threads lent to a {@link MicroBatchEngine} for the parts of a large batch that split by key: the engine runs a
 * batch's parts on them and waits. The lender owns the threads (and their names, their count, their end).
 */
public interface ParallelParts {

    /** How many parts may run at once. */
    int parallelism();

    /**
     * Runs {@code part.accept(p)} for every {@code p} in {@code [0, parts)}, on several threads where it can, and
     * returns once every part has run, its writes then seen by the caller. A part that throws makes this call throw
     * it (after the other parts have run or been given up).
     */
    void run(int parts, IntConsumer part);
}
