package io.flix.flink.shared;

import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;

/**
 * A harness of a dimension writer on an environment of the test's choosing (its task manager, job and subtask):
 * input 1 carries the updates; input 2, the lookups' end, carries no records. Flink's two-input harness takes no
 * environment.
 */
final class WriterHarness extends AbstractStreamOperatorTestHarness<Void> {

    private final DimensionWriterOperator<?> writer;

    WriterHarness(DimensionWriterOperator<?> writer, MockEnvironment environment) throws Exception {
        super(writer, environment);
        this.writer = writer;
    }

    void processElement(StreamRecord<EncodedUpdates> update) throws Exception {
        writer.processElement1(update);
    }

    /** Waits until the batch the writer handed to its apply thread, if any, is applied. */
    void awaitApplied() throws Exception {
        writer.awaitApplied();
    }

    /** A watermark of the update stream. */
    void processWatermark(Watermark mark) throws Exception {
        writer.processWatermark1(mark);
    }

    /** The update stream ends. */
    void endUpdates() throws Exception {
        writer.endInput(1);
    }
}
