package io.flix.flink.shared;

import io.flix.flink.Enriched;
import io.flix.flink.FlushPolicy;
import io.flix.flink.IndexSettings;
import io.flix.flink.LookupKind;
import io.flix.flink.Match;
import io.flix.flink.Rejected;
import io.flix.flink.batching.BatchDeadline;
import io.flix.flink.batching.IndexCallWorker;
import io.flix.flink.dimension.DimensionIndex;
import io.flix.flink.dimension.IndexLookups;
import io.flix.flink.payload.PayloadStore;
import io.flix.flink.taskmanager.ClassLoaderRelease;
import io.flix.flink.taskmanager.TaskManagerGauges;
import io.flix.flink.taskmanager.TaskManagerGpus;
import io.flix.index.FlixIndex;
import io.flix.index.RangeResult;

import org.apache.flink.api.common.operators.MailboxExecutor;
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
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Answers lookups against the task manager's shared dimension ({@link TaskManagerDimension}), chained to the
 * lookups' own upstream operator: no key-by, no serialization. Lookups are gathered per subtask into micro-batches
 * and each batch is answered by one index call under the dimension's shared lock, so the batch sees the dimension
 * between two of the applier's update batches. Exact, floor, ceiling and range lookups answer over the whole
 * dimension.
 *
 * <h2>When a batch goes to the index ({@link FlushPolicy})</h2>
 * Under {@link FlushPolicy#LOAD} (the default) batches follow the load: the index call of a batch, and the payload
 * reads that build its results, run on a worker thread of this subtask, one batch in flight at a time. A lookup that
 * arrives while none is in flight is sent at once (a batch of one at low load: no timer wait); the lookups that
 * arrive while a call runs are buffered on the task's thread and sent together when it completes. The completion is
 * handed back to the task's thread through the operator's {@link MailboxExecutor}, as Flink's async I/O operator
 * does: the results are emitted there, in arrival order, then the lookups gathered meanwhile are sent. A buffer that
 * reaches {@code batchSize} while a call is in flight waits for it (the task yields to its mailbox: backpressure).
 * The flush interval is not used: no lookup waits longer than the call in flight. Under {@link FlushPolicy#TIMER}
 * a batch is answered on the task's thread on {@code batchSize} lookups or when its first has waited the flush
 * interval, as before.
 *
 * <p>Under both, a watermark, a checkpoint barrier ({@link #prepareSnapshotPreBarrier}) and the end of input
 * ({@link #finish()}) first send what is buffered, wait for every call in flight and emit its results, and only then
 * go on: nothing buffered crosses a watermark or a barrier, and the operator keeps no state. An index call that fails
 * fails the task with the cause. {@link #close()} stops the worker thread (and waits for it) before it lets go of
 * the dimension.
 *
 * <p>The first batch waits until the dimension has been started on this task manager (by its applier, from a
 * restore or empty), at most {@code startTimeoutMillis}. A lookup without a usable key or range end, and one whose
 * stored payload does not deserialize, goes to the rejected side output ({@code FlixEnrichment.REJECTED}) with the
 * reason; the others of its batch come out.
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
    /** The builder's side output of rejected records. */
    private final OutputTag<Rejected> rejectedOutput;
    private final TypeSerializer<E> eventSerializerTemplate;
    private final KeySelector<E, Long> lookupKey;
    private final LookupKind lookupKind;
    /** RANGE only: the end of each lookup's range; its key is the start. */
    private final KeySelector<E, Long> rangeEnd;
    private final int rangeLimit;
    private final int batchSize;
    private final long flushIntervalMillis;
    private final long startTimeoutMillis;
    private final FlushPolicy flushPolicy;

    private transient TaskManagerDimension<P> dimension;
    private transient boolean started;
    /** With object reuse, buffered events are copies: the upstream operator may reuse its objects. */
    private transient boolean copyEvents;
    private transient TypeSerializer<E> eventSerializer;
    /** The payload store the reader reads, and the reader: a new one where a restore replaced the store. */
    private transient PayloadStore<P> readerStore;
    private transient PayloadStore.Reader<P> reader;

    /** The lookups being gathered, on the task's thread. */
    private transient Batch gathering;
    /** LOAD: the batch whose index call is in flight on the worker; null when none is. */
    private transient Batch inFlight;
    /** LOAD: a cleared batch, to gather the next one in. */
    private transient Batch spare;
    /** LOAD: a test's executor for the index calls, set before {@link #open}; else null. */
    private transient Executor testWorker;
    /** LOAD: runs the index calls, on a thread of this subtask or on {@link #testWorker}. */
    private transient IndexCallWorker worker;
    private transient MailboxExecutor mailbox;
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
                                int rangeLimit, int batchSize, long flushIntervalMillis, long startTimeoutMillis,
                                OutputTag<Rejected> rejectedOutput) {
        this(dimensionId, settings, payloadSerializer, eventSerializer, lookupKey, lookupKind, rangeEnd, rangeLimit,
                batchSize, flushIntervalMillis, startTimeoutMillis, FlushPolicy.LOAD, rejectedOutput);
    }

    public SharedLookupOperator(String dimensionId, IndexSettings settings, TypeSerializer<P> payloadSerializer,
                                TypeSerializer<E> eventSerializer, KeySelector<E, Long> lookupKey, LookupKind lookupKind, KeySelector<E, Long> rangeEnd,
                                int rangeLimit, int batchSize, long flushIntervalMillis, long startTimeoutMillis,
                                FlushPolicy flushPolicy, OutputTag<Rejected> rejectedOutput) {
        if (flushPolicy == null || rejectedOutput == null) {
            throw new IllegalArgumentException("the flush policy and the rejected output are required");
        }
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
        this.flushPolicy = flushPolicy;
        this.rejectedOutput = rejectedOutput;
    }

    /** Runs the index calls on {@code executor} instead of a thread of the subtask; before {@link #open}, for tests. */
    void setWorker(Executor executor) {
        this.testWorker = executor;
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
        gathering = new Batch(capacity, lookupKind == LookupKind.RANGE);
        outputRecord = new StreamRecord<>(null);
        if (flushPolicy == FlushPolicy.TIMER) {
            deadline = new BatchDeadline(getProcessingTimeService(), flushIntervalMillis, () -> gathering.count,
                    this::flush);
        } else {
            mailbox = getContainingTask().getMailboxExecutorFactory()
                    .createExecutor(getOperatorConfig().getChainIndex());
            worker = testWorker != null ? IndexCallWorker.on(testWorker, mailbox)
                    : IndexCallWorker.start("FliX lookups of dimension " + dimensionId + " ("
                            + getRuntimeContext().getTaskInfo().getTaskNameWithSubtasks() + ")", mailbox);
        }
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
        if (lookupKind == LookupKind.RANGE) {
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
        gathering.add(copyEvents ? eventSerializer.copy(event) : event, key, end, element);
        lookups.inc();
        final int count = gathering.count;
        if (flushPolicy == FlushPolicy.TIMER) {
            if (count >= batchSize) {
                flush();
            } else {
                deadline.recordBuffered(count);
            }
            return;
        }
        if (inFlight == null) {
            submit();
            return;
        }
        // a full buffer waits for the call in flight, whose completion sends it
        while (inFlight != null && gathering.count >= batchSize) {
            mailbox.yield();
        }
    }

    /** The lookups of one micro-batch, in arrival order, and once answered their results. */
    private static final class Batch {
        Object[] events;
        long[] keys;
        long[] ends;
        long[] timestamps;
        boolean[] hasTimestamp;
        int count;
        long[] valuesOut;
        long[] keysOut;
        /** Per lookup: its result, or the reason it is rejected. */
        Object[] answers;
        /** Keys of the index call that answered the batch (with other subtasks' where gathered). */
        int gathered;
        long startNanos;

        Batch(int capacity, boolean range) {
            events = new Object[capacity];
            keys = new long[capacity];
            ends = range ? new long[capacity] : null;
            timestamps = new long[capacity];
            hasTimestamp = new boolean[capacity];
            valuesOut = new long[capacity];
            keysOut = new long[capacity];
            answers = new Object[capacity];
        }

        void add(Object event, long key, long end, StreamRecord<?> element) {
            if (count == events.length) {
                grow();
            }
            events[count] = event;
            keys[count] = key;
            if (ends != null) {
                ends[count] = end;
            }
            hasTimestamp[count] = element.hasTimestamp();
            timestamps[count] = element.hasTimestamp() ? element.getTimestamp() : 0L;
            count++;
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

        void clear() {
            Arrays.fill(events, 0, count, null);
            Arrays.fill(answers, 0, count, null);
            count = 0;
            gathered = 0;
        }
    }

    // ---- LOAD: one batch in flight on the worker ----

    /** Sends the gathered lookups to the worker; none may be in flight. */
    private void submit() {
        final Batch batch = gathering;
        gathering = spare != null ? spare : new Batch(batch.events.length, lookupKind == LookupKind.RANGE);
        spare = null;
        inFlight = batch;
        batch.startNanos = System.nanoTime();
        try {
            worker.run(() -> answerOnWorker(batch), failure -> completed(batch, failure),
                    "FliX lookup batch answered");
        } catch (RejectedExecutionException e) {
            inFlight = null;
            throw new IllegalStateException("the FliX lookup worker of dimension " + dimensionId
                    + " is shut down; a batch of " + batch.count + " lookups cannot be answered", e);
        }
    }

    /** On the worker: the batch's index call and results. */
    private void answerOnWorker(Batch batch) throws Exception {
        answerUnderLock(batch, batch.count);
    }

    /**
     * Once the dimension has started: the index call of the batch's {@code n} lookups and their results, under the
     * dimension's shared lock; notes the keys of the call that answered them.
     */
    private void answerUnderLock(Batch batch, int n) throws Exception {
        if (!started) {
            dimension.awaitStarted(startTimeoutMillis);
            started = true;
        }
        batch.gathered = dimension.read((index, payloads) -> {
            answer(index, payloads, batch, n);
            final int gathered = index.lastGathered();
            return gathered == IndexLookups.OWN_BATCH ? n : gathered;
        });
    }

    /** On the task's thread, as a mail: emits the batch answered and sends the lookups gathered meanwhile. */
    private void completed(Batch batch, Throwable failure) throws Exception {
        inFlight = null;
        if (failure != null) {
            throw new IllegalStateException("a FliX lookup batch of " + batch.count + " lookups on dimension "
                    + dimensionId + " failed in its index call: " + failure, failure);
        }
        emit(batch, batch.count, batch.startNanos);
        spare = batch;
        if (gathering.count > 0) {
            submit();
        }
    }

    /**
     * Sends what is buffered and waits for every call in flight, emitting their results; before a watermark, a
     * barrier or the end of input goes on.
     */
    private void drain() throws Exception {
        if (flushPolicy == FlushPolicy.TIMER) {
            flush();
            return;
        }
        while (inFlight != null || gathering.count > 0) {
            if (inFlight == null) {
                submit();
            } else {
                mailbox.yield();
            }
        }
    }


    /** TIMER: answers the buffered lookups with one index call on this thread and emits them in arrival order. */
    void flush() throws Exception {
        final Batch batch = gathering;
        final int n = batch.count;
        if (n == 0) {
            return;
        }
        final long start = System.nanoTime();
        answerUnderLock(batch, n);
        emit(batch, n, start);
    }

    /** Emits an answered batch in arrival order and clears it. */
    private void emit(Batch batch, int n, long startNanos) {
        gatheredSizes.update(batch.gathered);
        final Object[] answers = batch.answers;
        for (int l = 0; l < n; l++) {
            final Object answer = answers[l];
            if (answer instanceof String reason) {
                reject(reason, batch.events[l], batch.hasTimestamp[l], batch.timestamps[l]);
                continue;
            }
            @SuppressWarnings("unchecked")
            final Enriched<E, P> value = (Enriched<E, P>) answer;
            if (batch.hasTimestamp[l]) {
                outputRecord.replace(value, batch.timestamps[l]);
            } else {
                outputRecord.replace(value);
                outputRecord.eraseTimestamp();
            }
            output.collect(outputRecord);
        }
        batch.clear();
        flushes.inc();
        batchSizes.update(n);
        flushLatencies.update(System.nanoTime() - startNanos);
    }

    /** Under the dimension's shared lock: the index call, and each lookup's result read into the batch's answers. */
    @SuppressWarnings("unchecked")
    private void answer(IndexLookups index, PayloadStore<P> payloads, Batch batch, int n) {
        final Object[] events = batch.events;
        final long[] keys = batch.keys;
        final long[] ends = batch.ends;
        final long[] valuesOut = batch.valuesOut;
        final long[] keysOut = batch.keysOut;
        final Object[] answers = batch.answers;
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
                            : payloadAnswer(events[l], value, keys[l], null);
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
                            : payloadAnswer(events[l], value, keysOut[l], keysOut[l]);
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
    private Object payloadAnswer(Object event, long value, long key, Long matchedKey) {
        try {
            return new Enriched<>((E) event, lookupKind, reader.payload(value, key), matchedKey, null);
        } catch (IOException e) {
            return e.getMessage();
        }
    }

    private void reject(String reason, Object record, StreamRecord<?> element) {
        reject(reason, record, element.hasTimestamp(), element.getTimestamp());
    }

    private void reject(String reason, Object record, boolean withTimestamp, long timestamp) {
        rejected.inc();
        output.collect(rejectedOutput, Rejected.of("lookup", reason, record, withTimestamp, timestamp));
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        drain();
        super.processWatermark(mark);
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        drain();
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    @Override
    public void finish() throws Exception {
        drain();
        super.finish();
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            stopWorker();
            if (dimension != null) {
                TaskManagerDimensions.release(dimension);
                dimension = null;
            }
        }
    }

    /**
     * Stops the worker this operator started and waits for it (a call in flight is interrupted where it waits), so
     * that no thread of the operator outlives it and none reads the dimension after it is released.
     */
    private void stopWorker() throws InterruptedException {
        final IndexCallWorker stopping = worker;
        worker = null;
        inFlight = null;
        if (stopping != null) {
            stopping.stop("the FliX lookup worker of dimension " + dimensionId);
        }
    }

    /** Lookups buffered, not yet sent; for tests. */
    int buffered() {
        return gathering == null ? 0 : gathering.count;
    }

    /** Lookups of the batch whose index call is in flight, 0 where none is; for tests. */
    int inFlight() {
        return inFlight == null ? 0 : inFlight.count;
    }
}
