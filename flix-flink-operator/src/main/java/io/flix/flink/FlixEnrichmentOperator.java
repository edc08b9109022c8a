package io.flix.flink;

import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.batch.BatchResults;
import io.flix.index.batch.MicroBatchEngine;
import io.flix.index.batch.OperationBatch;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupStatePartitionStreamProvider;
import org.apache.flink.runtime.state.KeyGroupsList;
import org.apache.flink.runtime.state.KeyedStateCheckpointOutputStream;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Enriches a stream of lookups against a changing dimension held in a task-manager-local FliX index: input 1
 * carries updates (a key and a payload, or a delete), input 2 carries lookup events. Both inputs must be keyed by
 * the same {@code Long} index key (as {@link FlixEnrichment} does); every lookup comes out once as an
 * {@link Enriched}, with the lookup's timestamp.
 *
 * <h2>Results</h2>
 * Records are buffered in arrival order and run through the index in micro-batches ({@link MicroBatchEngine}), with
 * the results one-at-a-time processing would give: a lookup sees exactly the updates that arrived before it. A
 * batch is flushed when it holds {@code batchSize} records, when the processing-time {@code flushInterval} has
 * passed since its first record, before a watermark is forwarded, before a checkpoint barrier
 * ({@link #prepareSnapshotPreBarrier}) and at end of input ({@link #finish()}); so nothing buffered crosses a
 * watermark or a checkpoint. The ordered lookup kinds ({@link LookupKind#FLOOR}, {@link LookupKind#CEILING},
 * {@link LookupKind#RANGE}) answer within this subtask's keys only: the keys of its key groups, not the whole
 * dimension.
 *
 * <h2>Payloads</h2>
 * Payloads are serialized with the user's {@link TypeSerializer} into a {@link RowStore} of byte slabs; the index
 * maps each key to its row id. A replaced or deleted key's row is freed after the batch and reused (each update
 * reads the row it supersedes in the same batch). Payloads of a fixed length of 1 to 8 bytes (a {@code Long}, an
 * {@code Integer}, a {@code Double}) are stored in the index value itself instead, their bytes big-endian: no row
 * store, nothing to free, no read per update. An 8-byte payload whose bits equal {@code NOT_FOUND}, which the
 * index cannot hold, or equal {@link #ESCAPED}, is stored as {@link #ESCAPED} with the key noted on the side
 * (such an update is flushed in a batch of its own). Each lookup result is a fresh deserialized copy.
 *
 * <h2>Bad records</h2>
 * A record whose key is null or whose key function throws, an update whose payload function throws or whose
 * payload fails to serialize, and a range lookup without a valid end, go to the side output
 * {@link FlixEnrichment#REJECTED} with the reason; the job goes on. ({@link FlixEnrichment} keys the inputs so
 * that records without a key reach the operator instead of failing the partitioner.)
 *
 * <h2>Keys</h2>
 * The operator reads each record's key with the inputs' key selectors itself and does not set Flink's per-record
 * key context ({@link #setKeyContextElement1} and {@link #setKeyContextElement2} do nothing): it keeps no keyed
 * state per record and no keyed timers, and its raw keyed state is grouped by key group from the index's keys at
 * snapshot time. This saves, per record, the key group computation and the key backend's bookkeeping.
 *
 * <h2>State: raw keyed state, one chunk per key group</h2>
 * The dimension is checkpointed as raw keyed state ({@link #isUsingCustomRawKeyedState()} is true): in
 * {@link #snapshotState} every key group of this subtask gets its (key, payload bytes) pairs, in key order, and
 * {@link #initializeState} reads back the key groups Flink hands this subtask, at whatever parallelism the job
 * restarts with. Chosen over union list state of key-group chunks because with raw keyed state Flink itself routes
 * each key group to the subtask that owns it after rescaling: no subtask reads (and discards) the whole dimension,
 * and restore is one pass and one bulk {@code build}. The price is a synchronous snapshot: the task pauses while
 * the pairs are exported and written (the index is first restructured, as the design asks, which also flattens its
 * chains). Measured on a 2-core machine with 10^7 keys at parallelism 2 (5 * 10^6 keys and 8-byte payloads per
 * subtask, file checkpoint storage): a pause of about 1 s per checkpoint (0.96 to 1.0 s, of which restructure
 * 0.23 s, on a busy machine; the rest is the export, the grouping by key group and the writing). Payload bytes
 * are written as the payload serializer wrote them, so a restore needs a payload serializer that reads the same
 * format.
 *
 * <h2>GPUs</h2>
 * With the GPU backend ({@code Backend.GPU}, or {@code AUTO} where a GPU is usable) each subtask opens its own index
 * on device {@code subtask index % devices}, where devices is {@link IndexSettings#devices()} or, where that is 0,
 * the number of entries in {@code CUDA_VISIBLE_DEVICES} (one where it is unset). CUDA numbers the visible devices
 * 0, 1, ... in the order listed, so give each task manager the GPUs it should use through that variable. The
 * subtasks of one task manager (one JVM) share one CUDA context per device: the device's primary context,
 * retained once per process and made current on each calling thread; the kernel module is loaded once into it.
 * Each subtask's index has its own device memory. All index work (kernels, CUB sorts, the copies through pinned
 * staging buffers) goes to the context's legacy default stream, and each index call waits for its results, so the
 * subtasks on one device run their GPU work one after the other, in the order they issue it, while their host work
 * (deserializing, buffering, the micro-batch engine's sort, emitting) overlaps. More subtasks than GPUs on a task
 * manager add host parallelism, not GPU parallelism.
 *
 * <h2>Metrics</h2>
 * On the operator's metric group: {@code flixBatchSize} and {@code flixFlushLatencyNanos} (histograms),
 * {@code flixIndexSize}, {@code flixIndexBytes}, {@code flixRowBytes}, {@code flixBackend} (gauges, refreshed
 * after each flush; index bytes at most once a second), {@code flixSnapshotMillis} (the last snapshot's pause),
 * and the counters {@code flixLookups}, {@code flixUpdates}, {@code flixRejected}, {@code flixFlushes}.
 *
 * @param <U> update records
 * @param <E> lookup events
 * @param <P> payloads stored per key
 */
public class FlixEnrichmentOperator<U, E, P> extends AbstractStreamOperator<Enriched<E, P>>
        implements TwoInputStreamOperator<U, E, Enriched<E, P>> {

    private static final long serialVersionUID = 1L;
    private static final org.slf4j.Logger SNAPSHOT_LOG =
            org.slf4j.LoggerFactory.getLogger(FlixEnrichmentOperator.class);
    private static final int STATE_FORMAT = 1;
    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;
    /**
     * Inline 8-byte payloads: the value stored for a payload whose bits are {@code NOT_FOUND} (which the index
     * rejects) or this value itself; which of the two it stands for is kept per key on the side. An arbitrary,
     * unlikely value: such payloads are flushed in a batch of their own.
     */
    static final long ESCAPED = Long.MIN_VALUE + 0x5EED_F11AL;

    private final PayloadFunction<U, P> payloadFunction;
    private final TypeSerializer<P> payloadSerializerTemplate;
    private final TypeSerializer<E> eventSerializerTemplate;
    private final LookupKind lookupKind;
    /** RANGE only: the end of each lookup's range; its key is the start. */
    private final KeySelector<E, Long> rangeEnd;
    private final int rangeLimit;
    private final int batchSize;
    /** Processing-time flush interval; 0 for none. */
    private final long flushIntervalMillis;
    private final IndexSettings settings;

    private transient TypeSerializer<P> payloadSerializer;
    private transient TypeSerializer<E> eventSerializer;
    private transient boolean copyEvents;
    private transient FlixIndex index;
    private transient MicroBatchEngine engine;
    private transient OperationBatch batch;
    /** Payloads of variable or larger length; null where payloads are inline. */
    private transient RowStore rows;
    /**
     * Payloads of a fixed length of 1 to 8 bytes are stored in the index value itself (their bytes big-endian):
     * no row store, and no read of the superseded row per update. 0 where payloads go to the row store.
     */
    private transient int inlineLength;
    /** Inline payloads of a {@code Long}: the value is the payload. */
    private transient boolean longPayload;
    /** Inline 8-byte payloads: keys stored as {@link #ESCAPED} whose payload's bits are {@code NOT_FOUND}. */
    private transient java.util.HashSet<Long> notFoundBitsKeys;
    /** Inline: the escaped update of the current (one-update) batch, applied to the side set after its flush. */
    private transient boolean escapedPending;
    private transient long escapedKey;
    private transient boolean escapedIsNotFoundBits;
    /** Inline: the keys of the buffered updates (to drop side-set entries they replace). */
    private transient long[] updateKeys;
    private transient byte[] inlineBytes;
    private transient DataOutputSerializer serializeBuffer;
    private transient DataInputDeserializer deserializeBuffer;
    private transient StreamRecord<Enriched<E, P>> outputRecord;

    // Buffered lookups in arrival order: event, timestamp, position in the batch.
    private transient Object[] lookupEvents;
    private transient long[] lookupTimestamps;
    private transient boolean[] lookupHasTimestamp;
    private transient int[] lookupPositions;
    private transient int lookupCount;
    /** Buffered updates where payloads go to the row store; null for inline payloads. */
    private transient RowUpdates rowUpdates;
    private transient int updateCount;
    private transient boolean flushTimerPending;
    /** Processing time at which the current batch is flushed at the latest. */
    private transient long batchDueMillis;

    private transient Histogram batchSizes;
    private transient Histogram flushLatencies;
    private transient Counter lookups;
    private transient Counter updates;
    private transient Counter rejected;
    private transient Counter flushes;
    // Gauges read these from the reporter thread; the index itself is not thread-safe.
    private transient volatile long indexSize;
    private transient volatile long indexBytes;
    private transient volatile long rowBytes;
    private transient volatile String backendName;
    private transient volatile long snapshotMillis;
    private transient long statsRefreshedNanos;

    public FlixEnrichmentOperator(PayloadFunction<U, P> payloadFunction, TypeSerializer<P> payloadSerializer,
                                  TypeSerializer<E> eventSerializer, LookupKind lookupKind,
                                  KeySelector<E, Long> rangeEnd, int rangeLimit, int batchSize,
                                  long flushIntervalMillis, IndexSettings settings) {
        if (payloadFunction == null || payloadSerializer == null || eventSerializer == null || lookupKind == null
                || settings == null) {
            throw new IllegalArgumentException("payload function, serializers, lookup kind and settings are required");
        }
        if (lookupKind == LookupKind.RANGE && (rangeEnd == null || rangeLimit < 1)) {
            throw new IllegalArgumentException("a RANGE lookup needs a range end and a limit >= 1");
        }
        if (batchSize < 1) {
            throw new IllegalArgumentException("batchSize must be >= 1, was " + batchSize);
        }
        if (flushIntervalMillis < 0) {
            throw new IllegalArgumentException("flushIntervalMillis must be >= 0, was " + flushIntervalMillis);
        }
        this.payloadFunction = payloadFunction;
        this.payloadSerializerTemplate = payloadSerializer;
        this.eventSerializerTemplate = eventSerializer;
        this.lookupKind = lookupKind;
        this.rangeEnd = rangeEnd;
        this.rangeLimit = rangeLimit;
        this.batchSize = batchSize;
        this.flushIntervalMillis = flushIntervalMillis;
        this.settings = settings;
    }

    @Override
    protected boolean isUsingCustomRawKeyedState() {
        return true;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        openIndex();
        if (context.isRestored()) {
            restore(context.getRawKeyedStateInputs());
        }
        refreshGauges();
    }

    @Override
    public void open() throws Exception {
        super.open();
        copyEvents = getExecutionConfig().isObjectReuseEnabled();
        registerMetrics(getMetricGroup());
    }

    /** Registers the operator's metrics on a group (the operator's own in {@link #open()}). */
    void registerMetrics(MetricGroup group) {
        batchSizes = group.histogram("flixBatchSize", new DescriptiveStatisticsHistogram(1000));
        flushLatencies = group.histogram("flixFlushLatencyNanos", new DescriptiveStatisticsHistogram(1000));
        lookups = group.counter("flixLookups");
        updates = group.counter("flixUpdates");
        rejected = group.counter("flixRejected");
        flushes = group.counter("flixFlushes");
        group.gauge("flixIndexSize", () -> indexSize);
        group.gauge("flixIndexBytes", () -> indexBytes);
        group.gauge("flixRowBytes", () -> rowBytes);
        group.gauge("flixBackend", () -> backendName);
        group.gauge("flixSnapshotMillis", () -> snapshotMillis);
    }

    private void openIndex() {
        if (index != null) {
            return;
        }
        final int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        final int parallelism = getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks();
        final int slots = getContainingTask().getEnvironment().getTaskManagerInfo().getConfiguration()
                .get(TaskManagerOptions.NUM_TASK_SLOTS);
        final FlixConfig config = settings.configFor(subtask, Math.max(1, Math.min(parallelism, slots)));
        index = FlixIndex.open(config);
        engine = new MicroBatchEngine(index);
        batch = new OperationBatch(Math.min(batchSize, 1 << 16) * 2);
        payloadSerializer = payloadSerializerTemplate.duplicate();
        final int payloadLength = payloadSerializer.getLength();
        if (payloadLength >= 1 && payloadLength <= 8) {
            inlineLength = payloadLength;
            longPayload = payloadSerializer instanceof LongSerializer;
            notFoundBitsKeys = new java.util.HashSet<>();
            inlineBytes = new byte[8];
        } else {
            // a fixed-length payload needs no per-row bookkeeping
            rows = new RowStore(Math.max(0, payloadLength));
            rowUpdates = new RowUpdates(rows, Math.min(batchSize, 1 << 16));
        }
        eventSerializer = eventSerializerTemplate.duplicate();
        serializeBuffer = new DataOutputSerializer(256);
        deserializeBuffer = new DataInputDeserializer();
        outputRecord = new StreamRecord<>(null);
        final int initial = Math.min(batchSize, 1 << 16);
        lookupEvents = new Object[initial];
        lookupTimestamps = new long[initial];
        lookupHasTimestamp = new boolean[initial];
        lookupPositions = new int[initial];
        updateKeys = new long[initial];
        backendName = index.backend().name().toLowerCase(java.util.Locale.ROOT);
    }

    // ---- records ----

    @Override
    public void processElement1(StreamRecord<U> element) throws Exception {
        final U update = element.getValue();
        final Long recordKey = indexKeyOrReject("update", stateKeySelector1, update, element);
        if (recordKey == null) {
            return;
        }
        final long key = recordKey;
        final P payload;
        try {
            payload = payloadFunction.payloadOf(update);
        } catch (Exception e) {
            reject("update", "the payload function failed: " + e, update, element);
            return;
        }
        if (inlineLength > 0) {
            processInlineUpdate(key, payload, update, element);
            return;
        }
        if (payload == null) {
            rowUpdates.delete(batch, key);
            updateCount++;
        } else {
            final int row;
            try {
                serializeBuffer.clear();
                payloadSerializer.serialize(payload, serializeBuffer);
                row = rows.add(serializeBuffer.getSharedBuffer(), 0, serializeBuffer.length());
            } catch (Exception | StackOverflowError e) {
                reject("update", "the payload failed to serialize: " + e, update, element);
                return;
            }
            rowUpdates.upsert(batch, key, row);
            updateCount++;
        }
        updates.inc();
        afterBuffering();
    }

    /**
     * The record's key by its input's key selector (for the enrichment's own key-by, the user's key), or null where
     * the key function fails or gives no Long: then the record has gone to the rejected side output with the reason.
     */
    @SuppressWarnings({"rawtypes", "unchecked"})
    private Long indexKeyOrReject(String input, KeySelector selector, Object record, StreamRecord<?> element) {
        final Object key;
        try {
            if (selector == null) {
                throw new IllegalStateException("the operator's inputs must be keyed");
            }
            key = selector instanceof IndexKey indexKey ? indexKey.indexKey(record) : selector.getKey(record);
        } catch (Exception e) {
            reject(input, "the key function failed: " + e, record, element);
            return null;
        }
        if (!(key instanceof Long)) {
            reject(input, key == null ? "the key is null" : "the key must be a Long, was " + key, record, element);
            return null;
        }
        return (Long) key;
    }

    /** Nothing to do: the operator reads each record's key itself, see the class comment. */
    @Override
    @SuppressWarnings("rawtypes")
    public void setKeyContextElement1(StreamRecord record) {
    }

    /** Nothing to do: the operator reads each record's key itself, see the class comment. */
    @Override
    @SuppressWarnings("rawtypes")
    public void setKeyContextElement2(StreamRecord record) {
    }

    private void processInlineUpdate(long key, P payload, U update, StreamRecord<U> element) {
        if (payload == null) {
            bufferInlineUpdate(key);
            batch.delete(key);
            updates.inc();
            afterBuffering();
            return;
        }
        final long bits;
        try {
            bits = inlineBits(payload);
        } catch (Exception | StackOverflowError e) {
            reject("update", "the payload failed to serialize: " + e, update, element);
            return;
        }
        if (inlineLength == 8 && (bits == NOT_FOUND || bits == ESCAPED)) {
            // stored as ESCAPED, the side set says which: alone in its batch, so every lookup sees the side set
            // as of its batch's start
            flush();
            bufferInlineUpdate(key);
            batch.upsert(key, ESCAPED);
            escapedPending = true;
            escapedKey = key;
            escapedIsNotFoundBits = bits == NOT_FOUND;
            updates.inc();
            flush();
            return;
        }
        bufferInlineUpdate(key);
        batch.upsert(key, bits);
        updates.inc();
        afterBuffering();
    }

    /** A fixed-length payload's bytes, big-endian, as a long. */
    private long inlineBits(P payload) throws IOException {
        if (longPayload) {
            return (Long) payload;
        }
        serializeBuffer.clear();
        payloadSerializer.serialize(payload, serializeBuffer);
        if (serializeBuffer.length() != inlineLength) {
            throw new IOException("the serializer declares " + inlineLength + " bytes and wrote "
                    + serializeBuffer.length());
        }
        return packBits(serializeBuffer.getSharedBuffer(), 0, inlineLength);
    }

    private static long packBits(byte[] bytes, int offset, int length) {
        long bits = 0;
        for (int i = 0; i < length; i++) {
            bits = (bits << 8) | (bytes[offset + i] & 0xFF);
        }
        return bits;
    }

    private void bufferInlineUpdate(long key) {
        if (updateCount == updateKeys.length) {
            updateKeys = Arrays.copyOf(updateKeys, updateCount * 2);
        }
        updateKeys[updateCount++] = key;
    }

    @Override
    public void processElement2(StreamRecord<E> element) throws Exception {
        final E event = copyEvents ? eventSerializer.copy(element.getValue()) : element.getValue();
        final Long recordKey = indexKeyOrReject("lookup", stateKeySelector2, event, element);
        if (recordKey == null) {
            return;
        }
        final long key = recordKey;
        final int position;
        switch (lookupKind) {
            case EXACT -> position = batch.get(key);
            case FLOOR -> position = batch.floor(key);
            case CEILING -> position = batch.ceiling(key);
            default -> {
                final Long end;
                try {
                    end = rangeEnd.getKey(event);
                } catch (Exception e) {
                    reject("lookup", "the range end function failed: " + e, event, element);
                    return;
                }
                if (end == null || end < key) {
                    reject("lookup", "the range end " + end + " is null or below the key " + key, event, element);
                    return;
                }
                position = batch.range(key, end, rangeLimit);
            }
        }
        bufferLookup(event, element, position);
        lookups.inc();
        afterBuffering();
    }

    private void bufferLookup(E event, StreamRecord<E> element, int position) {
        if (lookupCount == lookupEvents.length) {
            final int capacity = lookupCount * 2;
            lookupEvents = Arrays.copyOf(lookupEvents, capacity);
            lookupTimestamps = Arrays.copyOf(lookupTimestamps, capacity);
            lookupHasTimestamp = Arrays.copyOf(lookupHasTimestamp, capacity);
            lookupPositions = Arrays.copyOf(lookupPositions, capacity);
        }
        lookupEvents[lookupCount] = event;
        lookupHasTimestamp[lookupCount] = element.hasTimestamp();
        lookupTimestamps[lookupCount] = element.hasTimestamp() ? element.getTimestamp() : 0L;
        lookupPositions[lookupCount] = position;
        lookupCount++;
    }

    private void afterBuffering() {
        final int buffered = lookupCount + updateCount;
        if (buffered >= batchSize) {
            flush();
        } else if (buffered == 1 && flushIntervalMillis > 0) {
            // a batch starts: it is due one interval from now
            batchDueMillis = getProcessingTimeService().getCurrentProcessingTime() + flushIntervalMillis;
            if (!flushTimerPending) {
                registerFlushTimer(batchDueMillis);
            }
        }
    }

    /** One timer at a time; a timer that fires before the current batch is due moves to when it is. */
    private void registerFlushTimer(long dueMillis) {
        flushTimerPending = true;
        getProcessingTimeService().registerTimer(dueMillis, timestamp -> {
            flushTimerPending = false;
            if (lookupCount + updateCount == 0) {
                return;
            }
            if (timestamp >= batchDueMillis) {
                flush();
            } else {
                registerFlushTimer(batchDueMillis);
            }
        });
    }

    private void reject(String input, String reason, Object record, StreamRecord<?> element) {
        rejected.inc();
        final Rejected value = new Rejected(input, reason, record);
        output.collect(FlixEnrichment.REJECTED, element.hasTimestamp()
                ? new StreamRecord<>(value, element.getTimestamp()) : new StreamRecord<>(value));
    }

    // ---- flushing ----

    /** Runs the buffered records through the index and emits every buffered lookup, in arrival order. */
    void flush() {
        final int records = lookupCount + updateCount;
        if (records == 0) {
            return;
        }
        final long start = System.nanoTime();
        final BatchResults results = engine.execute(batch);
        for (int l = 0; l < lookupCount; l++) {
            final Enriched<E, P> value = enrich(l, results);
            // one record object for all, as Flink's TimestampedCollector does: outputs do not keep it
            if (lookupHasTimestamp[l]) {
                outputRecord.replace(value, lookupTimestamps[l]);
            } else {
                outputRecord.replace(value);
                outputRecord.eraseTimestamp();
            }
            output.collect(outputRecord);
        }
        if (inlineLength > 0) {
            // the batch replaced or deleted these keys' escaped values, if any
            if (!notFoundBitsKeys.isEmpty()) {
                for (int u = 0; u < updateCount; u++) {
                    notFoundBitsKeys.remove(updateKeys[u]);
                }
            }
            if (escapedPending) {
                if (escapedIsNotFoundBits) {
                    notFoundBitsKeys.add(escapedKey);
                }
                escapedPending = false;
            }
        } else {
            rowUpdates.releaseSuperseded(results);
        }
        Arrays.fill(lookupEvents, 0, lookupCount, null);
        lookupCount = 0;
        updateCount = 0;
        batch.clear();
        flushes.inc();
        batchSizes.update(records);
        flushLatencies.update(System.nanoTime() - start);
        refreshGauges();
    }

    @SuppressWarnings("unchecked")
    private Enriched<E, P> enrich(int l, BatchResults results) {
        final E event = (E) lookupEvents[l];
        final int position = lookupPositions[l];
        switch (lookupKind) {
            case EXACT -> {
                final long value = results.value(position);
                return new Enriched<>(event, LookupKind.EXACT,
                        value == NOT_FOUND ? null : payload(value, value == ESCAPED ? batch.key(position) : 0),
                        null, null);
            }
            case FLOOR, CEILING -> {
                final long value = results.value(position);
                if (value == NOT_FOUND) {
                    return new Enriched<>(event, lookupKind, null, null, null);
                }
                final long found = results.key(position);
                return new Enriched<>(event, lookupKind, payload(value, found), found, null);
            }
            default -> {
                final int first = results.rangeStart(position);
                final int count = results.rangeCount(position);
                final List<Match<P>> matches = new ArrayList<>(count);
                for (int j = first; j < first + count; j++) {
                    final long found = results.rangeKey(j);
                    matches.add(new Match<>(found, payload(results.rangeValue(j), found)));
                }
                return new Enriched<>(event, LookupKind.RANGE, null, null, matches);
            }
        }
    }

    /** The payload a key's stored index value stands for: a row id, or an inline payload. */
    @SuppressWarnings("unchecked")
    private P payload(long value, long key) {
        if (inlineLength == 0) {
            return read(value);
        }
        final long bits = inlineBitsOf(value, key);
        if (longPayload) {
            return (P) Long.valueOf(bits);
        }
        unpackBits(bits, inlineBytes, 0, inlineLength);
        deserializeBuffer.setBuffer(inlineBytes, 0, inlineLength);
        try {
            return payloadSerializer.deserialize(deserializeBuffer);
        } catch (IOException e) {
            throw new IllegalStateException("stored payload of key " + key + " does not deserialize", e);
        }
    }

    /** Inline: the payload's bits for a stored value. */
    private long inlineBitsOf(long value, long key) {
        return value == ESCAPED && inlineLength == 8 && notFoundBitsKeys.contains(key) ? NOT_FOUND : value;
    }

    private static void unpackBits(long bits, byte[] bytes, int offset, int length) {
        for (int i = length - 1; i >= 0; i--) {
            bytes[offset + i] = (byte) bits;
            bits >>>= 8;
        }
    }

    private P read(long row) {
        rows.readInto((int) row, deserializeBuffer);
        try {
            return payloadSerializer.deserialize(deserializeBuffer);
        } catch (IOException e) {
            throw new IllegalStateException("stored payload of row " + row + " does not deserialize", e);
        }
    }

    private void refreshGauges() {
        indexSize = index.size();
        rowBytes = rows == null ? 0 : rows.heapBytes();
        // stats() walks the node chains: at most once a second
        final long now = System.nanoTime();
        if (now - statsRefreshedNanos >= 1_000_000_000L || indexBytes == 0) {
            indexBytes = index.stats().bytes();
            statsRefreshedNanos = now;
        }
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        flush();
        super.processWatermark(mark);
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        flush();
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    @Override
    public void finish() throws Exception {
        flush();
        super.finish();
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            if (index != null) {
                index.close();
                index = null;
            }
            rows = null;
            rowUpdates = null;
        }
    }

    // ---- checkpoints ----

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        // empty in a running job (prepareSnapshotPreBarrier flushed); a harness may snapshot without it
        flush();
        final long start = System.nanoTime();
        index.restructure();
        final long restructured = System.nanoTime();
        final long size = index.size();
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("a subtask's snapshot holds at most " + (Integer.MAX_VALUE - 8)
                    + " keys, this one holds " + size);
        }
        final int n = (int) size;
        final long[] keys = new long[n];
        final long[] rowIds = new long[n];
        final int exported = index.exportFrom(Long.MIN_VALUE, keys, rowIds);
        if (exported != n) {
            throw new IllegalStateException("exported " + exported + " of " + n + " keys");
        }
        final int maxParallelism = getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks();
        // group by key group, key order kept within each: a counting sort that scatters the pairs, so the
        // writing below reads them in sequence
        final int[] keyGroupStart = new int[maxParallelism + 1];
        for (int i = 0; i < n; i++) {
            keyGroupStart[keyGroupOf(keys[i], maxParallelism) + 1]++;
        }
        for (int g = 0; g < maxParallelism; g++) {
            keyGroupStart[g + 1] += keyGroupStart[g];
        }
        final int[] fill = Arrays.copyOf(keyGroupStart, maxParallelism);
        final long[] groupedKeys = new long[n];
        final long[] groupedValues = new long[n];
        for (int i = 0; i < n; i++) {
            final int at = fill[keyGroupOf(keys[i], maxParallelism)]++;
            groupedKeys[at] = keys[i];
            groupedValues[at] = rowIds[i];
        }

        final KeyedStateCheckpointOutputStream out = context.getRawKeyedOperatorStateOutput();
        final KeyGroupsList keyGroups = out.getKeyGroupList();
        final DataOutputSerializer chunk = new DataOutputSerializer(1 << 16);
        for (int k = 0; k < keyGroups.getNumberOfKeyGroups(); k++) {
            final int keyGroup = keyGroups.getKeyGroupId(k);
            final int from = keyGroupStart[keyGroup];
            final int to = keyGroupStart[keyGroup + 1];
            out.startNewKeyGroup(keyGroup);
            chunk.clear();
            chunk.writeInt(STATE_FORMAT);
            chunk.writeInt(to - from);
            for (int s = from; s < to; s++) {
                chunk.writeLong(groupedKeys[s]);
                if (inlineLength > 0) {
                    unpackBits(inlineBitsOf(groupedValues[s], groupedKeys[s]), inlineBytes, 0, inlineLength);
                    chunk.writeInt(inlineLength);
                    chunk.write(inlineBytes, 0, inlineLength);
                } else {
                    final int row = (int) groupedValues[s];
                    final int length = rows.length(row);
                    chunk.writeInt(length);
                    chunk.write(rows.slab(row), rows.offset(row), length);
                }
                if (chunk.length() >= 1 << 20) {
                    out.write(chunk.getSharedBuffer(), 0, chunk.length());
                    chunk.clear();
                }
            }
            out.write(chunk.getSharedBuffer(), 0, chunk.length());
        }
        final long end = System.nanoTime();
        snapshotMillis = (end - start) / 1_000_000;
        SNAPSHOT_LOG.info("FliX snapshot of {} keys in {} ms (restructure {} ms, export and write {} ms)", n,
                snapshotMillis, (restructured - start) / 1_000_000, (end - restructured) / 1_000_000);
        refreshGauges();
    }

    /** The key group of a key, as Flink's key-by assigns it to a {@code Long} key. */
    private static int keyGroupOf(long key, int maxParallelism) {
        return KeyGroupRangeAssignment.computeKeyGroupForKeyHash(Long.hashCode(key), maxParallelism);
    }

    /** Reads the key groups Flink assigned this subtask and builds the index from them in one call. */
    private void restore(Iterable<KeyGroupStatePartitionStreamProvider> keyGroups) throws IOException {
        long[] keys = new long[1024];
        long[] rowIds = new long[1024];
        int n = 0;
        byte[] bytes = new byte[256];
        for (KeyGroupStatePartitionStreamProvider provider : keyGroups) {
            // the iterator seeks the shared stream to each key group: reading ahead past ours is harmless
            final DataInputViewStreamWrapper in =
                    new DataInputViewStreamWrapper(new BufferedInputStream(provider.getStream(), 1 << 16));
            final int format = in.readInt();
            if (format != STATE_FORMAT) {
                throw new IOException("key group " + provider.getKeyGroupId() + " has state format " + format
                        + ", expected " + STATE_FORMAT);
            }
            final int count = in.readInt();
            for (int c = 0; c < count; c++) {
                final long key = in.readLong();
                final int length = in.readInt();
                if (length > bytes.length) {
                    bytes = new byte[Math.max(length, bytes.length * 2)];
                }
                in.readFully(bytes, 0, length);
                if (n == keys.length) {
                    keys = Arrays.copyOf(keys, n * 2);
                    rowIds = Arrays.copyOf(rowIds, n * 2);
                }
                keys[n] = key;
                if (inlineLength > 0) {
                    if (length != inlineLength) {
                        throw new IOException("key " + key + " has a payload of " + length + " bytes, the payload "
                                + "serializer has " + inlineLength);
                    }
                    final long bits = packBits(bytes, 0, length);
                    if (inlineLength == 8 && (bits == NOT_FOUND || bits == ESCAPED)) {
                        rowIds[n] = ESCAPED;
                        if (bits == NOT_FOUND) {
                            notFoundBitsKeys.add(key);
                        }
                    } else {
                        rowIds[n] = bits;
                    }
                } else {
                    rowIds[n] = rows.add(bytes, 0, length);
                }
                n++;
            }
        }
        index.build(keys, rowIds, n);
    }

    // ---- for tests ----

    /** Keys in this subtask's index. */
    long indexSize() {
        return index.size();
    }

    /** Live payload rows (equals the index size between batches); inline payloads: the index size. */
    int liveRows() {
        return rows == null ? (int) index.size() : rows.liveRows();
    }

    /** Inline payloads: keys whose payload is kept as escaped. */
    int escapedKeys() {
        return notFoundBitsKeys == null ? 0 : notFoundBitsKeys.size();
    }

    /** Records buffered, not yet flushed. */
    int buffered() {
        return lookupCount + updateCount;
    }
}
