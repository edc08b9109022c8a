package io.flix.flink.shared;

import io.flix.flink.taskmanager.ClassLoaderRelease;
import io.flix.flink.taskmanager.TaskManagerGauges;
import io.flix.flink.taskmanager.TaskManagerGpus;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.BatchDeadline;
import io.flix.flink.IndexSettings;
import io.flix.flink.LookupKind;
import io.flix.flink.Match;
import io.flix.flink.PayloadStore;
import io.flix.flink.Rejected;
import io.flix.flink.dimension.DimensionIndex;
import io.flix.flink.dimension.IndexLookups;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.OutputTag;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Answers lookups against the task manager's shared dimension ({@link TaskManagerDimension}), chained to the
 * lookups' own upstream operator: no key-by, no serialization. Lookups are gathered per subtask into micro-batches
 * (on {@code batchSize} lookups, a processing-time flush interval, before a watermark, before a checkpoint barrier
 * and at end of input: nothing buffered crosses a watermark or a barrier) and each batch is answered by one index
 * call under the dimension's shared lock, so the batch sees the dimension between two of the applier's update
 * batches. Exact, floor, ceiling and range lookups answer over the whole dimension.
 *
 * <p>The first batch waits until the dimension has been started on this task manager (by its applier, from a
 * restore or empty), at most {@code startTimeoutMillis}. A lookup without a usable key or range end, and one whose
 * stored payload does not deserialize, goes to {@link FlixEnrichment#REJECTED} with the reason; the others of its
 * batch come out.
 *
 * @param <E> lookup events
 * @param <P> payloads
 */
public final class SharedLookupOperator<E, P> extends AbstractStreamOperator<Enriched<E, P>>
        implements OneInputStreamOperator<E, Enriched<E, P>> {

    private static final long serialVersionUID = 1L;
    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;
    /**
     * A side output that never carries a record: connected to the dimension's writer, it tells the writer when the
     * lookups end (see {@link DimensionWriterOperator}).
     */
    public static final OutputTag<Void> END_OF_LOOKUPS = new OutputTag<>("flix-end-of-lookups", Types.VOID);

    private final String dimensionId;
    private final IndexSettings settings;
    private final TypeSerializer<P> payloadSerializer;
    private final TypeSerializer<E> eventSerializerTemplate;
    private final KeySelector<E, Long> lookupKey;
    private final LookupKind lookupKind;
    /** RANGE only: the end of each lookup's range; its key is the start. */
    private final KeySelector<E, Long> rangeEnd;
    private final int rangeLimit;
    private final int batchSize;
    private final long flushIntervalMillis;
    private final long startTimeoutMillis;

    private transient TaskManagerDimension<P> dimension;
    private transient boolean started;
    /** With object reuse, buffered events are copies: the upstream operator may reuse its objects. */
    private transient boolean copyEvents;
    private transient TypeSerializer<E> eventSerializer;
    /** The payload store the reader reads, and the reader: a new one where a restore replaced the store. */
    private transient PayloadStore<P> readerStore;
    private transient PayloadStore.Reader<P> reader;

    private transient Object[] events;
    private transient long[] keys;
    private transient long[] ends;
    private transient long[] timestamps;
    private transient boolean[] hasTimestamp;
    private transient int count;
    private transient long[] valuesOut;
    private transient long[] keysOut;
    /** Per lookup of the batch being answered: its result, or the reason it is rejected. */
    private transient Object[] answers;
    private transient BatchDeadline deadline;
    private transient StreamRecord<Enriched<E, P>> outputRecord;

    private transient Counter lookups;
    private transient Counter rejected;
    private transient Counter flushes;
    private transient Histogram batchSizes;
    private transient Histogram flushLatencies;
    /** Keys of the index call that answered each batch: above the batch size where batches were gathered. */
    private transient Histogram gatheredSizes;

    public SharedLookupOperator(String dimensionId, IndexSettings settings, TypeSerializer<P> payloadSerializer,
                                TypeSerializer<E> eventSerializer, KeySelector<E, Long> lookupKey, LookupKind lookupKind, KeySelector<E, Long> rangeEnd,
                                int rangeLimit, int batchSize, long flushIntervalMillis, long startTimeoutMillis) {
        if (dimensionId == null || settings == null || payloadSerializer == null || eventSerializer == null
                || lookupKey == null || lookupKind == null) {
            throw new IllegalArgumentException("dimension id, settings, payload serializer, key and kind are required");
        }
        if (lookupKind == LookupKind.RANGE && (rangeEnd == null || rangeLimit < 1)) {
            throw new IllegalArgumentException("a RANGE lookup needs a range end and a limit >= 1");
        }
        if (batchSize < 1 || flushIntervalMillis < 0 || startTimeoutMillis < 1) {
            throw new IllegalArgumentException("batchSize must be >= 1, flushIntervalMillis >= 0 and "
                    + "startTimeoutMillis >= 1, were " + batchSize + ", " + flushIntervalMillis + ", "
                    + startTimeoutMillis);
        }
        this.dimensionId = dimensionId;
        this.settings = settings;
        this.payloadSerializer = payloadSerializer;
        this.eventSerializerTemplate = eventSerializer;
        this.lookupKey = lookupKey;
        this.lookupKind = lookupKind;
        this.rangeEnd = rangeEnd;
        this.rangeLimit = rangeLimit;
        this.batchSize = batchSize;
        this.flushIntervalMillis = flushIntervalMillis;
        this.startTimeoutMillis = startTimeoutMillis;
    }

    @Override
    public void open() throws Exception {
        super.open();
        final int capacity = Math.min(batchSize, 1 << 16);
        dimension = TaskManagerDimensions.acquire(getContainingTask().getEnvironment().getTaskManagerInfo(),
                getRuntimeContext().getJobInfo().getJobId(), dimensionId, settings, payloadSerializer, capacity,
                TaskManagerGpus.of(TaskManagerGpus.assignedTo(getRuntimeContext()),
                        settings.backend()));
        ClassLoaderRelease.register(getRuntimeContext());
        copyEvents = getExecutionConfig().isObjectReuseEnabled();
        eventSerializer = eventSerializerTemplate.duplicate();
        events = new Object[capacity];
        keys = new long[capacity];
        ends = lookupKind == LookupKind.RANGE ? new long[capacity] : null;
        timestamps = new long[capacity];
        hasTimestamp = new boolean[capacity];
        valuesOut = new long[capacity];
        keysOut = new long[capacity];
        answers = new Object[capacity];
        outputRecord = new StreamRecord<>(null);
        deadline = new BatchDeadline(getProcessingTimeService(), flushIntervalMillis, () -> count, this::flush);
        final MetricGroup group = getMetricGroup();
        lookups = group.counter("flixLookups");
        rejected = group.counter("flixRejected");
        flushes = group.counter("flixFlushes");
        batchSizes = group.histogram("flixBatchSize", new DescriptiveStatisticsHistogram(1000));
        flushLatencies = group.histogram("flixFlushLatencyNanos", new DescriptiveStatisticsHistogram(1000));
        gatheredSizes = group.histogram("flixGatheredBatchSize", new DescriptiveStatisticsHistogram(1000));
        group.gauge("flixIndexSize", dimension::size);
        group.gauge("flixBackend", dimension::backendName);
        group.gauge("flixDevices", () -> DimensionIndex.describe(dimension.devices()));
        TaskManagerGauges.register(group, TaskManagerGpus.assignedTo(getRuntimeContext()));
        group.gauge("flixIndexBytes", dimension::indexBytes);
        group.gauge("flixDimensionPendingUpdates", dimension::pendingUpdates);
        group.gauge("flixDimensionLagMillis", dimension::lagMillis);
    }

    @Override
    public void processElement(StreamRecord<E> element) throws Exception {
        final E event = element.getValue();
        final Long key;
        try {
            key = lookupKey.getKey(event);
        } catch (Exception e) {
            reject("the key function failed: " + e, event, element);
            return;
        }
        if (key == null) {
            reject("the key function gave null", event, element);
            return;
        }
        long end = 0;
        if (ends != null) {
            final Long rangeEndKey;
            try {
                rangeEndKey = rangeEnd.getKey(event);
            } catch (Exception e) {
                reject("the range end function failed: " + e, event, element);
                return;
            }
            if (rangeEndKey == null || rangeEndKey < key) {
                reject("the range [" + key + ", " + rangeEndKey + "] has no valid end", event, element);
                return;
            }
            end = rangeEndKey;
        }
        if (count == events.length) {
            grow();
        }
        events[count] = copyEvents ? eventSerializer.copy(event) : event;
        keys[count] = key;
        if (ends != null) {
            ends[count] = end;
        }
        hasTimestamp[count] = element.hasTimestamp();
        timestamps[count] = element.hasTimestamp() ? element.getTimestamp() : 0L;
        count++;
        lookups.inc();
        if (count >= batchSize) {
            flush();
        } else {
            deadline.recordBuffered(count);
        }
    }

    private void grow() {
        final int capacity = events.length * 2;
        events = Arrays.copyOf(events, capacity);
        keys = Arrays.copyOf(keys, capacity);
        if (ends != null) {
            ends = Arrays.copyOf(ends, capacity);
        }
        timestamps = Arrays.copyOf(timestamps, capacity);
        hasTimestamp = Arrays.copyOf(hasTimestamp, capacity);
        valuesOut = new long[capacity];
        keysOut = new long[capacity];
        answers = new Object[capacity];
    }


    /** Answers the buffered lookups with one index call and emits them in arrival order. */
    void flush() throws Exception {
        final int n = count;
        if (n == 0) {
            return;
        }
        final long start = System.nanoTime();
        if (!started) {
            dimension.awaitStarted(startTimeoutMillis);
            started = true;
        }
        final int gathered = dimension.read((index, payloads) -> {
            answer(index, payloads, n);
            return index.lastGathered();
        });
        gatheredSizes.update(gathered);
        for (int l = 0; l < n; l++) {
            final Object answer = answers[l];
            if (answer instanceof String reason) {
                reject(reason, events[l], hasTimestamp[l], timestamps[l]);
                continue;
            }
            @SuppressWarnings("unchecked")
            final Enriched<E, P> value = (Enriched<E, P>) answer;
            if (hasTimestamp[l]) {
                outputRecord.replace(value, timestamps[l]);
            } else {
                outputRecord.replace(value);
                outputRecord.eraseTimestamp();
            }
            output.collect(outputRecord);
        }
        Arrays.fill(events, 0, n, null);
        Arrays.fill(answers, 0, n, null);
        count = 0;
        flushes.inc();
        batchSizes.update(n);
        flushLatencies.update(System.nanoTime() - start);
    }

    /** Under the dimension's shared lock: the index call, and each lookup's result read into {@link #answers}. */
    @SuppressWarnings("unchecked")
    private void answer(IndexLookups index, PayloadStore<P> payloads, int n) {
        if (payloads != readerStore) {
            readerStore = payloads;
            reader = payloads.reader();
        }
        switch (lookupKind) {
            case EXACT -> {
                index.get(keys, n, valuesOut);
                for (int l = 0; l < n; l++) {
                    final long value = valuesOut[l];
                    answers[l] = value == NOT_FOUND
                            ? new Enriched<>((E) events[l], LookupKind.EXACT, null, null, null)
                            : payloadAnswer(l, value, keys[l], null);
                }
            }
            case FLOOR, CEILING -> {
                if (lookupKind == LookupKind.FLOOR) {
                    index.floor(keys, n, keysOut, valuesOut);
                } else {
                    index.ceiling(keys, n, keysOut, valuesOut);
                }
                for (int l = 0; l < n; l++) {
                    final long value = valuesOut[l];
                    answers[l] = value == NOT_FOUND
                            ? new Enriched<>((E) events[l], lookupKind, null, null, null)
                            : payloadAnswer(l, value, keysOut[l], keysOut[l]);
                }
            }
            default -> {
                final RangeResult ranges = index.range(keys, ends, n, rangeLimit);
                for (int l = 0; l < n; l++) {
                    final int first = ranges.offsets()[l];
                    final int last = ranges.offsets()[l + 1];
                    final List<Match<P>> matches = new ArrayList<>(last - first);
                    String failure = null;
                    for (int j = first; j < last && failure == null; j++) {
                        final long found = ranges.keys()[j];
                        try {
                            matches.add(new Match<>(found, reader.payload(ranges.values()[j], found)));
                        } catch (IOException e) {
                            failure = e.getMessage();
                        }
                    }
                    answers[l] = failure != null ? failure
                            : new Enriched<>((E) events[l], LookupKind.RANGE, null, null, matches);
                }
            }
        }
    }

    /** A found lookup's result, or the reason its payload cannot be read. */
    @SuppressWarnings("unchecked")
    private Object payloadAnswer(int l, long value, long key, Long matchedKey) {
        try {
            return new Enriched<>((E) events[l], lookupKind, reader.payload(value, key), matchedKey, null);
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    private void reject(String reason, Object record, StreamRecord<?> element) {
        reject(reason, record, element.hasTimestamp(), element.getTimestamp());
    }

    private void reject(String reason, Object record, boolean withTimestamp, long timestamp) {
        rejected.inc();
        output.collect(FlixEnrichment.REJECTED, Rejected.of("lookup", reason, record, withTimestamp, timestamp));
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
            if (dimension != null) {
                TaskManagerDimensions.release(dimension);
                dimension = null;
            }
        }
    }

    /** Lookups buffered, not yet answered; for tests. */
    int buffered() {
        return count;
    }
}
