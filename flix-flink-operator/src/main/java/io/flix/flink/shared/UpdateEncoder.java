package io.flix.flink.shared;

import io.flix.flink.FlixEnrichment;
import io.flix.flink.PayloadFunction;
import io.flix.flink.Rejected;
import io.flix.flink.RowStore;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * The first step of the shared mode's update path, chained to the update stream's source: takes each update's index
 * key and payload, serializes the payload, and passes on an {@link EncodedUpdate} to be broadcast to the dimension's
 * writers. An update without a usable key, whose payload function throws, or whose payload does not serialize (or
 * serializes to a length its serializer does not declare, or larger than a row may be) goes to
 * {@link FlixEnrichment#REJECTED} with the reason, once, here.
 *
 * @param <U> update records
 * @param <P> payloads
 */
public final class UpdateEncoder<U, P> extends AbstractStreamOperator<EncodedUpdate>
        implements OneInputStreamOperator<U, EncodedUpdate> {

    private static final long serialVersionUID = 1L;

    private final KeySelector<U, Long> updateKey;
    private final PayloadFunction<U, P> payloadFunction;
    private final TypeSerializer<P> payloadSerializerTemplate;

    private transient TypeSerializer<P> payloadSerializer;
    private transient DataOutputSerializer buffer;
    private transient StreamRecord<EncodedUpdate> out;
    private transient Counter rejected;

    public UpdateEncoder(KeySelector<U, Long> updateKey, PayloadFunction<U, P> payloadFunction,
                         TypeSerializer<P> payloadSerializer) {
        if (updateKey == null || payloadFunction == null || payloadSerializer == null) {
            throw new IllegalArgumentException("the update key, the payload function and its serializer are required");
        }
        this.updateKey = updateKey;
        this.payloadFunction = payloadFunction;
        this.payloadSerializerTemplate = payloadSerializer;
    }

    @Override
    public void open() throws Exception {
        super.open();
        payloadSerializer = payloadSerializerTemplate.duplicate();
        buffer = new DataOutputSerializer(256);
        out = new StreamRecord<>(null);
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
        byte[] bytes = null;
        if (payload != null) {
            buffer.clear();
            try {
                payloadSerializer.serialize(payload, buffer);
            } catch (Exception | StackOverflowError e) {
                reject("the payload failed to serialize: " + e, update, element);
                return;
            }
            final int declared = payloadSerializer.getLength();
            if (declared > 0 && buffer.length() != declared) {
                reject("the payload serializer declares " + declared + " bytes and wrote " + buffer.length(),
                        update, element);
                return;
            }
            if (buffer.length() > RowStore.MAX_ROW_BYTES) {
                reject("the payload has " + buffer.length() + " bytes, more than a row holds ("
                        + RowStore.MAX_ROW_BYTES + ")", update, element);
                return;
            }
            bytes = buffer.getCopyOfBuffer();
        }
        final EncodedUpdate encoded = new EncodedUpdate(key, bytes);
        if (element.hasTimestamp()) {
            out.replace(encoded, element.getTimestamp());
        } else {
            out.replace(encoded);
            out.eraseTimestamp();
        }
        output.collect(out);
    }

    private void reject(String reason, Object record, StreamRecord<?> element) {
        rejected.inc();
        output.collect(FlixEnrichment.REJECTED,
                Rejected.of("update", reason, record, element.hasTimestamp(), element.getTimestamp()));
    }
}
