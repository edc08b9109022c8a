package io.flix.index;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The contents an index goes through under a sequence of updates, state {@code j} being the contents after the
 * first {@code j} updates, each kept as a {@link TreeMapOracle}, so that a lookup that ran while the updates were
 * applied can be checked: its answer must be the answer of one state that the index held while the call ran.
 * The updating thread brackets each update with {@link #updateStarting()} and {@link #updateApplied()}; a lookup
 * reads {@link #appliedUpdates()} before its call and {@link #startedUpdates()} after it, and those two bound the
 * states it may have seen. Recorded before the threads start; read-only while they run.
 */
final class IndexStates {

    private final List<TreeMapOracle> states = new ArrayList<>();
    private final AtomicInteger started = new AtomicInteger();
    private final AtomicInteger applied = new AtomicInteger();

    /** Records the oracle's contents as the next state. */
    void record(TreeMapOracle oracle) {
        final TreeMapOracle copy = new TreeMapOracle();
        copy.build(oracle.export());
        states.add(copy);
    }

    int count() {
        return states.size();
    }

    TreeMapOracle state(int j) {
        return states.get(j);
    }

    void updateStarting() {
        started.incrementAndGet();
    }

    void updateApplied() {
        applied.incrementAndGet();
    }

    /** Updates that had returned: a call that starts now sees this state or a later one. */
    int appliedUpdates() {
        return applied.get();
    }

    /** Updates that had begun: a call that ended before now saw this state or an earlier one. */
    int startedUpdates() {
        return Math.min(started.get(), states.size() - 1);
    }
}
