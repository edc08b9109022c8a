package io.flix.flink.shared;

import io.flix.flink.PayloadFunction;
import io.flix.flink.Rejected;
import io.flix.flink.batching.BatchDeadline;
import io.flix.flink.payload.RowStore;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.OutputTag;

/**
 * The first step of the shared mode's update path, chained to the update stream's source: takes each update's index
 * key and payload, serializes the payload, and passes the updates on in {@link EncodedUpdates} blocks, in the order
 * received, to be broadcast to the dimension's writers. An update without a usable key, whose payload function
 * throws, or whose payload does not serialize (or serializes to a length its serializer does not declare, or larger
 * than a row may be) goes to the rejected side output ({@code FlixEnrichment.REJECTED}) with the reason, once, here.
 *
 * <p>A block is sent when it holds {@code blockUpdates} updates or {@link #BLOCK_BYTES} bytes, when the
 * processing-time flush interval has passed since its first update, before a watermark is forwarded, before a
 * checkpoint barrier and at end of input: nothing held crosses a barrier or a watermark. Blocks carry no timestamp
 * (the writers emit nothing).
 *
 * @param <U> update records
 * @param <P> payloads
 */
public final class UpdateEncoder<U, P> extends AbstractStreamOperator<EncodedUpdates>
        implements OneInputStreamOperator<U, EncodedUpdates>, BoundedOneInput {

    private static final long serialVersionUID = 1L;
    /**
     * A block is sent once it holds this many bytes: a quarter of a network buffer (32 KiB by default), so that few
     * blocks span two buffers (a receiver copies a spanning record whole before it reads it).
     */
    static final int BLOCK_BYTES = 8 * 1024;

    private final KeySelector<U, Long> updateKey;
    private final PayloadFunction<U, P> payloadFunction;
    private final TypeSerializer<P> payloadSerializerTemplate;
    /** The builder's side output of rejected records. */
    private final OutputTag<Rejected> rejectedOutput;
    private final int blockUpdates;
    /** Processing-time flush interval; 0 for none. */
    private final long flushIntervalMillis;

    private transient TypeSerializer<P> payloadSerializer;
    private transient EncodedUpdates.Builder block;
    private transient StreamRecord<EncodedUpdates> out;
    private transient BatchDeadline deadline;
    private transient Counter rejected;

    public UpdateEncoder(KeySelector<U, Long> updateKey, PayloadFunction<U, P> payloadFunction,
                         TypeSerializer<P> payloadSerializer, int blockUpdates, long flushIntervalMillis,
                         OutputTag<Rejected> rejectedOutput) {
        if (updateKey == null || payloadFunction == null || payloadSerializer == null || rejectedOutput == null) {
            throw new IllegalArgumentException(
                    "the update key, the payload function, its serializer and the rejected output are required");
        }
        if (blockUpdates < 1 || flushIntervalMillis < 0) {
            throw new IllegalArgumentException("blockUpdates must be >= 1 and flushIntervalMillis >= 0, were "
                    + blockUpdates + " and " + flushIntervalMillis);
        }
        this.updateKey = updateKey;
        this.payloadFunction = payloadFunction;
        this.payloadSerializerTemplate = payloadSerializer;
        this.blockUpdates = blockUpdates;
        this.flushIntervalMillis = flushIntervalMillis;
        this.rejectedOutput = rejectedOutput;
    }

    @Override
    public void open() throws Exception {
        super.open();
        payloadSerializer = payloadSerializerTemplate.duplicate();
        block = new EncodedUpdates.Builder(BLOCK_BYTES + 1024);
        out = new StreamRecord<>(null);
        deadline = new BatchDeadline(getProcessingTimeService(), flushIntervalMillis, block::count, this::send);
        rejected = getMetricGroup().counter("flixRejected");
    }

    @Override
    public void processElement(StreamRecord<U> element) throws Exception {
        final U update = element.getValue();
        final Long key;
        try {
            key = updateKey.getKey(update);
        } catch (Exception e) {
            reject("the key function failed: " + e, update, element);
            return;
        }
        if (key == null) {
            reject("the key function gave null", update, element);
            return;
        }
        final P payload;
        try {
            payload = payloadFunction.payloadOf(update);
        } catch (Exception e) {
            reject("the payload function failed: " + e, update, element);
            return;
        }
        if (payload == null) {
            block.delete(key);
        } else if (!encodeUpsert(key, payload, update, element)) {
            return;
        }
        if (block.count() >= blockUpdates || block.bytes() >= BLOCK_BYTES) {
            send();
        } else {
            deadline.recordBuffered(block.count());
        }
    }

    /** Adds the upsert to the block; false where it was rejected instead. */
    private boolean encodeUpsert(long key, P payload, U update, StreamRecord<U> element) throws Exception {
        block.startUpsert(key);
        try {
            payloadSerializer.serialize(payload, block.payloadOutput());
        } catch (Exception | StackOverflowError e) {
            block.abandonUpsert();
            reject("the payload failed to serialize: " + e, update, element);
            return false;
        }
        final int length = block.payloadLength();
        final int declared = payloadSerializer.getLength();
        if (declared > 0 && length != declared) {
            block.abandonUpsert();
            reject("the payload serializer declares " + declared + " bytes and wrote " + length, update, element);
            return false;
        }
        if (length > RowStore.MAX_ROW_BYTES) {
            block.abandonUpsert();
            reject("the payload has " + length + " bytes, more than a row holds (" + RowStore.MAX_ROW_BYTES + ")",
                    update, element);
            return false;
        }
        block.endUpsert();
        return true;
    }

    /** Sends the block held, if any. */
    private void send() {
        if (block.count() == 0) {
            return;
        }
        out.replace(block.build());
        output.collect(out);
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        send();
        super.processWatermark(mark);
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        send();
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    @Override
    public void endInput() {
        send();
    }

    @Override
    public void finish() throws Exception {
        send();
        super.finish();
    }

    private void reject(String reason, Object record, StreamRecord<?> element) {
        rejected.inc();
        output.collect(rejectedOutput,
                Rejected.of("update", reason, record, element.hasTimestamp(), element.getTimestamp()));
    }
}
