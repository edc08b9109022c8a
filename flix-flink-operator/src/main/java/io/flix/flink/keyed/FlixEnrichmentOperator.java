package io.flix.flink.keyed;

import io.flix.flink.Enriched;
import io.flix.flink.FlushPolicy;
import io.flix.flink.IndexSettings;
import io.flix.flink.LookupKind;
import io.flix.flink.Match;
import io.flix.flink.PayloadFunction;
import io.flix.flink.Rejected;
import io.flix.flink.batching.BatchDeadline;
import io.flix.flink.batching.IndexCallWorker;
import io.flix.flink.payload.InlinePayloads;
import io.flix.flink.payload.PayloadStore;
import io.flix.flink.payload.RowStore;
import io.flix.flink.state.BlockDataInput;
import io.flix.flink.state.KeyGroupSnapshotCodec;
import io.flix.flink.taskmanager.BackendReport;
import io.flix.flink.taskmanager.ClassLoaderRelease;
import io.flix.flink.taskmanager.TaskManagerGauges;
import io.flix.flink.taskmanager.TaskManagerGpus;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.batch.BatchResults;
import io.flix.index.batch.MicroBatchEngine;
import io.flix.index.batch.OperationBatch;

import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.io.network.partition.consumer.InputGate;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;
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
import org.apache.flink.util.OutputTag;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BooleanSupplier;

/**
 * Enriches a stream of lookups against a changing dimension held in a task-manager-local FliX index: input 1
 * carries updates (a key and a payload, or a delete), input 2 carries lookup events. Both inputs must be keyed by
 * the same {@code Long} index key (as {@code FlixEnrichment} does); every lookup comes out once as an
 * {@link Enriched}, with the lookup's timestamp.
 *
 * <h2>Results</h2>
 * Records are buffered in arrival order and run through the index in micro-batches ({@link MicroBatchEngine}), with
 * the results one-at-a-time processing would give: a lookup sees exactly the updates that arrived before it. When a
 * batch goes to the index is the {@link FlushPolicy}:
 * <ul>
 *   <li>{@link FlushPolicy#LOAD} (the builder's default): batches follow the load. The index call of a batch runs on
 *   a worker thread of the subtask, one call in flight at a time. A record that arrives while none is in flight is
 *   sent at once (a batch of one at low load: no timer wait); the records that arrive while a call runs are buffered
 *   on the task's thread (updates are serialized into the payload store as they come) and sent together when it
 *   completes. While more input is already queued in the task's input gates (the operator is behind its input), a
 *   batch is not sent before it is full or that queue has run dry: under load the batches grow to {@code batchSize}
 *   instead of staying at what arrives during one call (a few hundred records, measured), whose many small index
 *   calls cost the GPU backend most; the flush interval bounds how long a batch held so waits. The completion is handed back to the task's thread through the operator's {@link MailboxExecutor}:
 *   the lookups' results are read from the payload store and emitted there, in arrival order, the rows the batch
 *   superseded are freed there, then the records gathered meanwhile are sent; so the payload store is only ever
 *   used on the task's thread, and the worker only runs the index call. A buffer that reaches {@code batchSize}
 *   while a call is in flight waits for it (the task yields to its mailbox: backpressure). An index call that fails
 *   fails the task with the cause.</li>
 *   <li>{@link FlushPolicy#TIMER}: a batch runs on the task's thread when it holds {@code batchSize} records or when
 *   the processing-time {@code flushInterval} has passed since its first record.</li>
 * </ul>
 * Under both, a watermark, a checkpoint barrier ({@link #prepareSnapshotPreBarrier}) and the end of input
 * ({@link #finish()}) first send what is buffered, wait for the call in flight and emit every result; so nothing
 * buffered crosses a watermark or a checkpoint. {@link #close()} stops the worker (and waits for it) before it closes
 * the index. The ordered lookup kinds ({@link LookupKind#FLOOR}, {@link LookupKind#CEILING},
 * {@link LookupKind#RANGE}) answer within this subtask's keys only: the keys of its key groups, not the whole
 * dimension.
 *
 * <h2>Payloads</h2>
 * Payloads are serialized with the user's {@link TypeSerializer} into a {@link PayloadStore}: a {@link RowStore}
 * of byte slabs, the index mapping each key to its row id ({@code RowStorePayloads}: a replaced or deleted key's
 * row is freed after the batch and reused; the store gives memory back as the dimension shrinks), or, for payloads
 * of a fixed length of 1 to 8 bytes (a {@code Long}, an {@code Integer}, a {@code Double}), the index value itself
 * ({@link InlinePayloads}: no row store, nothing to free; an 8-byte payload with the bits of {@code NOT_FOUND} is
 * escaped, and such an update flushed in a batch of its own). Each lookup result is a fresh deserialized copy.
 *
 * <h2>Bad records</h2>
 * A record whose key is null or whose key function throws, an update whose payload function throws or whose
 * payload fails to serialize, and a range lookup without a valid end, go to the side output
 * the rejected side output with the reason; the job goes on. ({@code FlixEnrichment} keys the inputs so
 * that records without a key reach the operator instead of failing the partitioner.) A stored payload that
 * serialized but does not deserialize (a serializer that cannot read what it wrote) is kept as it is, in the index
 * and in checkpoints, so a restore still works; each lookup that finds it goes to the rejected side output
 * with a reason naming the key and the serializer's exception, while the batch's other lookups come out as usual.
 * A {@link LookupKind#RANGE} lookup with such a payload among its matches is rejected as a whole (its reason names
 * the key), rather than answered with a match left out; so are {@link LookupKind#FLOOR} and
 * {@link LookupKind#CEILING} lookups whose found key holds one. An update of the key replaces the bad payload. A
 * restore that migrates the payloads to a new serializer (see below) cannot migrate such a payload and fails,
 * naming its key: restore with the old serializer first, and replace or delete the key.
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
 * 0.23 s, on a busy machine; the rest is the export, the grouping by key group and the writing).
 *
 * <p>Each key group's chunk ({@link KeyGroupSnapshotCodec}, state format 2) holds the payloads' bytes as the payload
 * serializer wrote them, with that serializer's {@link org.apache.flink.api.common.typeutils.TypeSerializerSnapshot}
 * and the encoding (inline, or the row store). A restore resolves the job's payload serializer against it as
 * Flink's own keyed state does: compatible, the bytes are restored; compatible after migration, each payload is
 * read with the old serializer and written with the new one; compatible with a reconfigured serializer, that one
 * is used; incompatible (say {@code Long} payloads before, {@code String} payloads now), the restore fails with an
 * error naming both serializers and their types. A change between inline and row-store payloads is restored into
 * the new encoding. State of format 1 (written by earlier versions, without a serializer snapshot) is read with the
 * job's payload serializer as it is, as those versions did: it must read what the old one wrote.
 *
 * <h2>GPUs</h2>
 * With the GPU backend ({@code Backend.GPU}, or {@code AUTO} where a GPU is usable) each subtask opens its own index
 * on device {@code subtask index % devices}, where devices is {@link IndexSettings#devices()} or, where that is 0,
 * every CUDA device the task manager sees (the driver's count; {@link IndexSettings#deviceCount()}). CUDA numbers
 * the devices a process sees 0, 1, ... in the order {@code CUDA_VISIBLE_DEVICES} lists them, so give each task
 * manager the GPUs it should use through that variable. The gauge {@code flixDevice} reports the subtask's device
 * (-1 on the CPU). The
 * subtasks of one task manager (one JVM) share one CUDA context per device: the device's primary context,
 * retained once per process and made current on each calling thread; the kernel module is loaded once into it.
 * Each subtask's index has its own device memory and its own CUDA streams (never the legacy default stream), so
 * the GPU work of the subtasks on one device (kernels, CUB sorts, the copies through pinned staging) overlaps, as
 * their host work (deserializing, buffering, the micro-batch engine, emitting) does; each index call waits for its
 * own results.
 *
 * <h2>Metrics</h2>
 * On the operator's metric group: {@code flixBatchSize} and {@code flixFlushLatencyNanos} (histograms),
 * {@code flixIndexSize}, {@code flixIndexBytes}, {@code flixRowBytes}, {@code flixBackend} (gauges, refreshed
 * after each flush; index bytes at most once a second), {@code flixDevice} (the index's CUDA device, -1 on the CPU),
 * {@code flixSnapshotMillis} (the last snapshot's pause),
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
    private static final long NOT_FOUND = FlixIndex.NOT_FOUND;

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
    private final FlushPolicy flushPolicy;
    private final IndexSettings settings;
    /** The builder's side output of rejected records. */
    private final OutputTag<Rejected> rejectedOutput;

    private transient TypeSerializer<E> eventSerializer;
    private transient boolean copyEvents;
    private transient FlixIndex index;
    private transient MicroBatchEngine engine;
    /** Each key's payload, inline or in a row store; set in {@link #initializeState}, from the state if any. */
    private transient PayloadStore<P> payloads;
    private transient StreamRecord<Enriched<E, P>> outputRecord;

    /** The records being gathered, on the task's thread. */
    private transient RecordBatch gathering;
    /** LOAD: the batch whose index call is in flight on the worker; null when none is. */
    private transient RecordBatch inFlight;
    /** LOAD: a cleared batch, to gather the next one in. */
    private transient RecordBatch spare;
    /** LOAD: a test's executor for the index calls, set before {@link #open}; else null. */
    private transient Executor testWorker;
    /** LOAD: runs the index calls, on a thread of this subtask or on {@link #testWorker}. */
    private transient IndexCallWorker worker;
    private transient MailboxExecutor mailbox;
    private transient BatchDeadline deadline;
    /** LOAD: whether more input is queued in the task's input gates; set by a test before {@link #open}. */
    private transient BooleanSupplier moreInputQueued;
    /** LOAD: the gathered batch passed its flush interval while a call was in flight: send it on completion. */
    private transient boolean gatheredOverdue;

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
    /** The device of the subtask's index, -1 on the CPU or before the index opens. */
    private transient volatile int device;
    private transient volatile long snapshotMillis;
    private transient long statsRefreshedNanos;
    private transient long sizeAtStats;

    public FlixEnrichmentOperator(PayloadFunction<U, P> payloadFunction, TypeSerializer<P> payloadSerializer,
                                  TypeSerializer<E> eventSerializer, LookupKind lookupKind,
                                  KeySelector<E, Long> rangeEnd, int rangeLimit, int batchSize,
                                  long flushIntervalMillis, FlushPolicy flushPolicy, IndexSettings settings,
                                  OutputTag<Rejected> rejectedOutput) {
        if (payloadFunction == null || payloadSerializer == null || eventSerializer == null || lookupKind == null
                || flushPolicy == null || settings == null || rejectedOutput == null) {
            throw new IllegalArgumentException("payload function, serializers, lookup kind, flush policy, settings "
                    + "and the rejected output are required");
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
        this.rejectedOutput = rejectedOutput;
        this.payloadSerializerTemplate = payloadSerializer;
        this.eventSerializerTemplate = eventSerializer;
        this.lookupKind = lookupKind;
        this.rangeEnd = rangeEnd;
        this.rangeLimit = rangeLimit;
        this.batchSize = batchSize;
        this.flushIntervalMillis = flushIntervalMillis;
        this.flushPolicy = flushPolicy;
        this.settings = settings;
    }

    /** LOAD: runs the index calls on {@code executor} instead of a thread of the operator's own; for tests. */
    void setWorker(Executor executor) {
        this.testWorker = executor;
    }

    /** LOAD: says whether more input is queued, instead of the task's input gates; for tests. */
    void setMoreInputQueued(BooleanSupplier queued) {
        this.moreInputQueued = queued;
    }

    /** The uid the builder gave the operator, for the error of a shared mode's savepoint under it. */
    private String uid;

    /** Sets the uid the builder gave the operator, named in the error of a shared mode's savepoint under it. */
    public void guardUid(String operatorUid) {
        this.uid = operatorUid;
    }

    @Override
    protected boolean isUsingCustomRawKeyedState() {
        return true;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        if (context.isRestored()
                && context.getOperatorStateStore().getRegisteredStateNames().contains(ModeGuard.SHARED_MODE_STATE)) {
            throw new IllegalStateException(ModeGuard.sharedToKeyed(uid));
        }
        openIndex();
        if (context.isRestored()) {
            restore(context.getRawKeyedStateInputs());
        } else {
            payloads = PayloadStore.of(payloadSerializerTemplate.duplicate(), batchCapacity());
        }
        refreshGauges();
    }

    @Override
    public void open() throws Exception {
        super.open();
        copyEvents = getExecutionConfig().isObjectReuseEnabled();
        if (flushPolicy == FlushPolicy.TIMER) {
            deadline = new BatchDeadline(getProcessingTimeService(), flushIntervalMillis,
                    () -> gathering.records(), this::flush);
        } else {
            deadline = new BatchDeadline(getProcessingTimeService(), flushIntervalMillis,
                    () -> gathering.records(), this::gatheredBatchDue);
            if (moreInputQueued == null) {
                final InputGate[] gates = getContainingTask().getEnvironment().getAllInputGates();
                moreInputQueued = gates == null || gates.length == 0 ? () -> false : () -> anyAvailable(gates);
            }
            mailbox = getContainingTask().getMailboxExecutorFactory()
                    .createExecutor(getOperatorConfig().getChainIndex());
            worker = testWorker != null ? IndexCallWorker.on(testWorker, mailbox)
                    : IndexCallWorker.start("FliX enrichment index calls ("
                            + getRuntimeContext().getTaskInfo().getTaskNameWithSubtasks() + ")", mailbox);
        }
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
        if (index == null) {
            device = -1;
        }
        group.gauge("flixDevice", () -> device);
        TaskManagerGauges.register(group, TaskManagerGpus.assignedTo(getRuntimeContext()));
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
        final List<Integer> gpus = TaskManagerGpus.of(
                TaskManagerGpus.assignedTo(getRuntimeContext()), settings.backend());
        final FlixConfig config = settings.configFor(subtask, Math.max(1, Math.min(parallelism, slots)), gpus);
        index = FlixIndex.open(config);
        ClassLoaderRelease.register(getRuntimeContext());
        engine = new MicroBatchEngine(index);
        gathering = new RecordBatch(batchCapacity());
        eventSerializer = eventSerializerTemplate.duplicate();
        outputRecord = new StreamRecord<>(null);
        backendName = BackendReport.describe(index, settings.backend(), "FliX enrichment subtask " + subtask);
        device = index.device();
    }

    /** Records a batch's buffers hold before growing. */
    private int batchCapacity() {
        return Math.min(batchSize, 1 << 16);
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
        if (payload == null) {
            payloads.delete(gathering.operations, key);
            gathering.updateCount++;
            updates.inc();
            afterBuffering();
            return;
        }
        final long encoded;
        try {
            encoded = payloads.encode(payload);
        } catch (Exception | StackOverflowError e) {
            reject("update", "the payload failed to serialize: " + e, update, element);
            return;
        }
        if (payloads.isolated(encoded)) {
            // alone in its batch, applied before the next one is gathered: see PayloadStore#isolated
            drain();
            payloads.upsert(gathering.operations, key, encoded);
            gathering.updateCount++;
            updates.inc();
            drain();
            return;
        }
        payloads.upsert(gathering.operations, key, encoded);
        gathering.updateCount++;
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

    @Override
    public void processElement2(StreamRecord<E> element) throws Exception {
        final E event = copyEvents ? eventSerializer.copy(element.getValue()) : element.getValue();
        final Long recordKey = indexKeyOrReject("lookup", stateKeySelector2, event, element);
        if (recordKey == null) {
            return;
        }
        final long key = recordKey;
        final OperationBatch operations = gathering.operations;
        final int position;
        switch (lookupKind) {
            case EXACT -> position = operations.get(key);
            case FLOOR -> position = operations.floor(key);
            case CEILING -> position = operations.ceiling(key);
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
                position = operations.range(key, end, rangeLimit);
            }
        }
        gathering.addLookup(event, element, position);
        lookups.inc();
        afterBuffering();
    }

    private void afterBuffering() throws Exception {
        final int buffered = gathering.records();
        if (flushPolicy == FlushPolicy.TIMER) {
            if (buffered >= batchSize) {
                flush();
            } else {
                deadline.recordBuffered(buffered);
            }
            return;
        }
        deadline.recordBuffered(buffered);
        if (inFlight == null) {
            if (buffered >= batchSize || !moreInputQueued.getAsBoolean()) {
                submit();
            }
            return;
        }
        // a full buffer waits for the call in flight, whose completion sends it
        while (inFlight != null && gathering.records() >= batchSize) {
            mailbox.yield();
        }
    }

    /**
     * Whether a gate that has not finished has input queued: a finished gate (a bounded update stream that ended) stays
     * available with nothing queued.
     */
    static boolean anyAvailable(InputGate[] gates) {
        for (InputGate gate : gates) {
            if (!gate.isFinished() && gate.isAvailable()) {
                return true;
            }
        }
        return false;
    }

    /** LOAD: the gathered batch's flush interval passed: send it now, or when the call in flight completes. */
    private void gatheredBatchDue() {
        if (inFlight == null) {
            submit();
        } else {
            gatheredOverdue = true;
        }
    }

    private void reject(String input, String reason, Object record, StreamRecord<?> element) {
        reject(input, reason, record, element.hasTimestamp(), element.hasTimestamp() ? element.getTimestamp() : 0L);
    }

    private void reject(String input, String reason, Object record, boolean hasTimestamp, long timestamp) {
        rejected.inc();
        output.collect(rejectedOutput, Rejected.of(input, reason, record, hasTimestamp, timestamp));
    }

    // ---- batches ----

    /** The records of one micro-batch in arrival order: its index operations, and each lookup's event and position. */
    private static final class RecordBatch {
        final OperationBatch operations;
        Object[] events;
        long[] timestamps;
        boolean[] hasTimestamp;
        int[] positions;
        int lookupCount;
        int updateCount;
        /** Once sealed: what the payload store frees once the batch ran. */
        PayloadStore.SealedUpdates sealed;
        /** LOAD: the index call's results (the engine's buffer, valid until its next call). */
        BatchResults results;
        long startNanos;

        RecordBatch(int capacity) {
            operations = new OperationBatch(capacity * 2);
            events = new Object[capacity];
            timestamps = new long[capacity];
            hasTimestamp = new boolean[capacity];
            positions = new int[capacity];
        }

        int records() {
            return lookupCount + updateCount;
        }

        void addLookup(Object event, StreamRecord<?> element, int position) {
            if (lookupCount == events.length) {
                final int capacity = lookupCount * 2;
                events = Arrays.copyOf(events, capacity);
                timestamps = Arrays.copyOf(timestamps, capacity);
                hasTimestamp = Arrays.copyOf(hasTimestamp, capacity);
                positions = Arrays.copyOf(positions, capacity);
            }
            events[lookupCount] = event;
            hasTimestamp[lookupCount] = element.hasTimestamp();
            timestamps[lookupCount] = element.hasTimestamp() ? element.getTimestamp() : 0L;
            positions[lookupCount] = position;
            lookupCount++;
        }

        void clear() {
            Arrays.fill(events, 0, lookupCount, null);
            lookupCount = 0;
            updateCount = 0;
            operations.clear();
            sealed = null;
            results = null;
        }
    }

    /** TIMER: runs the buffered records through the index on this thread and emits every buffered lookup in order. */
    void flush() {
        final RecordBatch batch = gathering;
        if (batch.records() == 0) {
            return;
        }
        batch.startNanos = System.nanoTime();
        batch.sealed = payloads.sealBatch();
        emitAndRelease(batch, engine.execute(batch.operations));
    }

    /** LOAD: sends the gathered records to the worker; none may be in flight. */
    private void submit() {
        gatheredOverdue = false;
        final RecordBatch batch = gathering;
        batch.sealed = payloads.sealBatch();
        gathering = spare != null ? spare : new RecordBatch(batchCapacity());
        spare = null;
        inFlight = batch;
        batch.startNanos = System.nanoTime();
        try {
            worker.run(() -> batch.results = engine.execute(batch.operations), failure -> completed(batch, failure),
                    "FliX enrichment batch ran");
        } catch (RejectedExecutionException e) {
            inFlight = null;
            throw new IllegalStateException("the FliX enrichment worker is shut down; a batch of " + batch.records()
                    + " records cannot run", e);
        }
    }

    /** LOAD, on the task's thread as a mail: emits the batch that ran and sends the records gathered meanwhile. */
    private void completed(RecordBatch batch, Throwable failure) {
        inFlight = null;
        if (failure != null) {
            throw new IllegalStateException("a FliX enrichment batch of " + batch.lookupCount + " lookups and "
                    + batch.updateCount + " updates failed in its index call: " + failure, failure);
        }
        emitAndRelease(batch, batch.results);
        spare = batch;
        final int gathered = gathering.records();
        if (gathered > 0 && (gathered >= batchSize || gatheredOverdue || !moreInputQueued.getAsBoolean())) {
            submit();
        }
    }

    /**
     * Sends what is buffered and waits for the call in flight, emitting every result; before a watermark, a barrier
     * or the end of input goes on.
     */
    private void drain() throws Exception {
        if (flushPolicy == FlushPolicy.TIMER) {
            flush();
            return;
        }
        while (inFlight != null || gathering.records() > 0) {
            if (inFlight == null) {
                submit();
            } else {
                mailbox.yield();
            }
        }
    }

    /** Emits a batch's lookups in arrival order, frees the rows its updates superseded, and clears it. */
    private void emitAndRelease(RecordBatch batch, BatchResults results) {
        final int records = batch.records();
        for (int l = 0; l < batch.lookupCount; l++) {
            final Enriched<E, P> value;
            try {
                value = enrich(batch, l, results);
            } catch (IOException e) {
                // a stored payload that does not deserialize: this lookup only, see "Bad records"
                reject("lookup", e.getMessage(), batch.events[l], batch.hasTimestamp[l], batch.timestamps[l]);
                continue;
            }
            // one record object for all, as Flink's TimestampedCollector does: outputs do not keep it
            if (batch.hasTimestamp[l]) {
                outputRecord.replace(value, batch.timestamps[l]);
            } else {
                outputRecord.replace(value);
                outputRecord.eraseTimestamp();
            }
            output.collect(outputRecord);
        }
        batch.sealed.applied(results);
        final long startNanos = batch.startNanos;
        batch.clear();
        flushes.inc();
        batchSizes.update(records);
        flushLatencies.update(System.nanoTime() - startNanos);
        refreshGauges();
    }

    /**
     * The result of buffered lookup {@code l}.
     *
     * @throws IOException where a payload it found does not deserialize (for a range, any of its matches)
     */
    @SuppressWarnings("unchecked")
    private Enriched<E, P> enrich(RecordBatch batch, int l, BatchResults results) throws IOException {
        final E event = (E) batch.events[l];
        final int position = batch.positions[l];
        switch (lookupKind) {
            case EXACT -> {
                final long value = results.value(position);
                return new Enriched<>(event, LookupKind.EXACT, value == NOT_FOUND ? null
                        : payloads.payload(value, batch.operations.key(position)), null, null);
            }
            case FLOOR, CEILING -> {
                final long value = results.value(position);
                if (value == NOT_FOUND) {
                    return new Enriched<>(event, lookupKind, null, null, null);
                }
                final long found = results.key(position);
                return new Enriched<>(event, lookupKind, payloads.payload(value, found), found, null);
            }
            default -> {
                final int first = results.rangeStart(position);
                final int count = results.rangeCount(position);
                final List<Match<P>> matches = new ArrayList<>(count);
                for (int j = first; j < first + count; j++) {
                    final long found = results.rangeKey(j);
                    matches.add(new Match<>(found, payloads.payload(results.rangeValue(j), found)));
                }
                return new Enriched<>(event, LookupKind.RANGE, null, null, matches);
            }
        }
    }

    private void refreshGauges() {
        indexSize = index.size();
        rowBytes = payloads.heapBytes();
        // stats() walks the node chains: once a second, or where the size moved by an eighth since (a few times in
        // a load), so that the gauge does not trail a load that ends within the second
        final long now = System.nanoTime();
        if (now - statsRefreshedNanos >= 1_000_000_000L || indexBytes == 0
                || Math.abs(indexSize - sizeAtStats) > sizeAtStats / 8) {
            indexBytes = index.stats().bytes();
            statsRefreshedNanos = now;
            sizeAtStats = indexSize;
        }
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
            try {
                stopWorker();
            } finally {
                if (index != null) {
                    index.close();
                    index = null;
                }
                payloads = null;
            }
        }
    }

    /**
     * Stops the worker this operator started and waits for it, so that no index call runs once the index closes and
     * no thread of the operator outlives it.
     */
    private void stopWorker() throws InterruptedException {
        final IndexCallWorker stopping = worker;
        worker = null;
        inFlight = null;
        if (stopping != null) {
            stopping.stop("the FliX enrichment worker");
        }
    }

    // ---- checkpoints ----

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        // empty in a running job (prepareSnapshotPreBarrier drained); a harness may snapshot without it
        drain();
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
        final long[] groupedKeys = new long[n];
        final long[] groupedValues = new long[n];
        final int[] keyGroupStart = KeyGroupSnapshotCodec.groupByKeyGroup(keys, rowIds, n, maxParallelism,
                groupedKeys, groupedValues);
        final KeyGroupSnapshotCodec.Writer<P> writer = new KeyGroupSnapshotCodec.Writer<>(payloads);
        final KeyedStateCheckpointOutputStream out = context.getRawKeyedOperatorStateOutput();
        final KeyGroupsList keyGroups = out.getKeyGroupList();
        for (int k = 0; k < keyGroups.getNumberOfKeyGroups(); k++) {
            final int keyGroup = keyGroups.getKeyGroupId(k);
            out.startNewKeyGroup(keyGroup);
            writer.writeKeyGroup(out, groupedKeys, groupedValues, keyGroupStart[keyGroup],
                    keyGroupStart[keyGroup + 1]);
        }
        final long end = System.nanoTime();
        snapshotMillis = (end - start) / 1_000_000;
        SNAPSHOT_LOG.info("FliX snapshot of {} keys in {} ms (restructure {} ms, export and write {} ms)", n,
                snapshotMillis, (restructured - start) / 1_000_000, (end - restructured) / 1_000_000);
        refreshGauges();
    }

    /** Reads the key groups Flink assigned this subtask and builds the index from them in one call. */
    private void restore(Iterable<KeyGroupStatePartitionStreamProvider> keyGroups) throws Exception {
        final KeyGroupSnapshotCodec.Reader<P> reader = new KeyGroupSnapshotCodec.Reader<>(
                payloadSerializerTemplate.duplicate(), getUserCodeClassloader(), batchCapacity());
        for (KeyGroupStatePartitionStreamProvider provider : keyGroups) {
            // the iterator seeks the shared stream to each key group: reading ahead past ours is harmless
            reader.readKeyGroup(provider.getKeyGroupId(), new BlockDataInput(provider.getStream(), 1 << 16));
        }
        payloads = reader.payloads();
        index.build(reader.keys(), reader.values(), reader.count());
    }

    // ---- for tests ----

    /** Keys in this subtask's index. */
    long indexSize() {
        return index.size();
    }

    /** Live payload rows (equals the index size between batches); inline payloads: the index size. */
    int liveRows() {
        return payloads.liveRows() < 0 ? (int) index.size() : payloads.liveRows();
    }

    /** Inline payloads: keys whose payload is kept as escaped. */
    int escapedKeys() {
        return payloads instanceof InlinePayloads<P> inline ? inline.escapedKeys() : 0;
    }

    /** Heap held by the payloads outside the index. */
    long payloadHeapBytes() {
        return payloads.heapBytes();
    }

    /** Closes the index under the operator, so that its next index call fails; for tests of that failure. */
    void closeIndex() {
        index.close();
    }

    /** The most records a batch holds. */
    int batchSize() {
        return batchSize;
    }

    /** Records buffered, not yet sent to the index. */
    int buffered() {
        return gathering.records();
    }

    /** LOAD: records of the batch whose index call is in flight, 0 where none is. */
    int inFlight() {
        return inFlight == null ? 0 : inFlight.records();
    }
}
