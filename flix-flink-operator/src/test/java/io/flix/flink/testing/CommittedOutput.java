package io.flix.flink.testing;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A sink whose contents are checkpointed operator state, published when the job finishes: what it publishes is what
 * an exactly-once sink would have committed. Records are kept as their {@code toString()}.
 *
 * @param <T> records
 */
public final class CommittedOutput<T> extends AbstractStreamOperator<Void> implements OneInputStreamOperator<T, Void> {

    private static final long serialVersionUID = 1L;

    /** Per run: the records committed, once its job has finished. */
    public static final Map<String, List<String>> PUBLISHED = new ConcurrentHashMap<>();

    private final String run;
    private transient List<String> seen;
    private transient ListState<String> state;

    public CommittedOutput(String run) {
        this.run = run;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        state = context.getOperatorStateStore().getListState(new ListStateDescriptor<>("committed", Types.STRING));
        seen = new ArrayList<>();
        for (String s : state.get()) {
            seen.add(s);
        }
    }

    @Override
    public void processElement(StreamRecord<T> element) {
        seen.add(String.valueOf(element.getValue()));
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        state.update(seen);
    }

    @Override
    public void finish() throws Exception {
        PUBLISHED.computeIfAbsent(run, r -> Collections.synchronizedList(new ArrayList<>())).addAll(seen);
        super.finish();
    }
}
