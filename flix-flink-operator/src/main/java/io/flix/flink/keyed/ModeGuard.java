package io.flix.flink.keyed;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Holds the shared mode's place under the enrichment's uid, where the keyed mode keeps its dimension, so that a
 * savepoint taken in one mode is not resumed in the other with an empty dimension. A keyed operator on an input that
 * never carries a record: it sees a keyed mode's dimension (raw keyed state) restored under the uid and refuses it,
 * and it writes {@link #SHARED_MODE_STATE}, by which the keyed operator refuses a shared mode's savepoint.
 *
 * <p>Why: Flink maps state by uid only. Without it, the shared mode's lookup operator held the uid, took the keyed
 * dimension's raw keyed state without a word (a non-keyed operator cannot read keyed state), and answered none.
 */
public final class ModeGuard<T> extends AbstractStreamOperator<Void> implements OneInputStreamOperator<T, Void> {

    private static final long serialVersionUID = 1L;

    /** Operator state (one flag a subtask) that marks a shared mode's savepoint under the enrichment's uid. */
    static final String SHARED_MODE_STATE = "flix-shared-mode";

    private final String uid;
    private transient ListState<Boolean> marker;

    public ModeGuard(String uid) {
        this.uid = uid;
    }

    @Override
    protected boolean isUsingCustomRawKeyedState() {
        return true; // the keyed mode's pairs are not Flink's timers: never hand them to the state backend
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        marker = context.getOperatorStateStore().getUnionListState(
                new ListStateDescriptor<>(SHARED_MODE_STATE, Types.BOOLEAN));
        if (context.isRestored() && context.getRawKeyedStateInputs().iterator().hasNext()) {
            throw new IllegalStateException(keyedToShared(uid));
        }
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        marker.update(java.util.List.of(true));
    }

    @Override
    public void processElement(StreamRecord<T> element) {
        // the input carries nothing: it only makes this operator keyed
    }

    static String keyedToShared(String uid) {
        return "the savepoint holds a keyed FliX dimension (FlixEnrichment.of) under uid '" + uid + "', and this job "
                + "runs uid '" + uid + "' in the shared mode (FlixEnrichment.shared), whose dimension (uid '" + uid
                + "-dimension') would start empty and answer none until every key is updated again. Resume this "
                + "savepoint with FlixEnrichment.of(...), or switch modes without it: start the shared job without "
                + "this savepoint (or under another uid) and replay the dimension's changelog from its beginning";
    }

    static String sharedToKeyed(String uid) {
        return "the savepoint holds a shared FliX dimension (FlixEnrichment.shared) under uid '" + uid + "' (its rows "
                + "under uid '" + uid + "-dimension'), and this job runs uid '" + uid + "' in the keyed mode "
                + "(FlixEnrichment.of), whose dimension would start empty and answer none until every key is updated "
                + "again. Resume this savepoint with FlixEnrichment.shared(...), or switch modes without it: start the "
                + "keyed job without this savepoint (or under another uid) and replay the dimension's changelog from "
                + "its beginning";
    }
}
