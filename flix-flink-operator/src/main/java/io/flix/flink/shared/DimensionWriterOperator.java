package io.flix.flink.shared;

import io.flix.flink.FlushPolicy;
import io.flix.flink.IndexSettings;
import io.flix.flink.batching.BatchDeadline;
import io.flix.flink.dimension.DimensionIndex;
import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.state.BlockDataInput;
import io.flix.flink.state.KeyGroupSnapshotCodec;
import io.flix.flink.taskmanager.ClassLoaderRelease;
import io.flix.flink.taskmanager.TaskManagerGauges;
import io.flix.flink.taskmanager.TaskManagerGpus;

import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.ThreadSafeSimpleCounter;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.DefaultOperatorStateBackend;
import org.apache.flink.runtime.state.OperatorStateCheckpointOutputStream;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.OperatorStreamStateHandle;
import org.apache.flink.runtime.state.SnapshotResult;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StatePartitionStreamProvider;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedMultiInput;
import org.apache.flink.streaming.api.operators.OperatorSnapshotFutures;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.FutureTask;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.RunnableFuture;

/**
 * Keeps a shared-mode dimension current on each task manager: receives every block of {@link EncodedUpdates} (the
 * update stream is broadcast to it) and, where this subtask is its task manager's applier (see
 * {@link TaskManagerDimension}), applies them to the task manager's dimension in batches, in the order received. A
 * writer that is not its task manager's applier skips each block's bytes as its task thread reads them
 * ({@link EncodedUpdatesSerializer}): a task manager of many slots copies the update stream once, not once a slot.
 *
 * <p>A batch is applied on a thread of the applier's own while its task thread receives and decodes the next one:
 * one batch at a time, in order. When a batch goes to that thread follows the {@link FlushPolicy}:
 * <ul>
 *   <li>{@link FlushPolicy#LOAD}: what is held goes as soon as no batch is being applied; updates that arrive while
 *   one is applied gather and go together when it is done (a mail on the task's thread hands them over). So a quiet
 *   stream's updates are applied at once, and a load's batches grow to what arrives during one apply, at most
 *   {@code maxBatch} ({@link IndexSettings#loadBatchMax} by default): a full batch waits for the one being applied
 *   (backpressure). One apply of many keys costs the index less per key than many small ones (the CPU index's
 *   merges and the GPU's calls both gain), which is what lets a load or a burst of updates go at the rate of the
 *   index.</li>
 *   <li>{@link FlushPolicy#TIMER}: a batch goes when {@code batchSize} updates are held or the processing-time flush
 *   interval has passed since the first.</li>
 * </ul>
 * Under both, a watermark, a checkpoint barrier and the end of the updates first hand over what is held and wait
 * until it is applied, so that each of these still finds every earlier update applied; a failed apply fails the
 * task at the next hand-over or wait.
 *
 * <h2>State: one copy of the dimension per checkpoint</h2>
 * At a checkpoint the applier on the task manager that runs writer subtask 0 writes the whole dimension (its
 * contents as of the barrier, every earlier update applied) as this operator's raw operator state, in the
 * key-group snapshot format ({@link KeyGroupSnapshotCodec}: the payload serializer's snapshot, then the pairs); no
 * other subtask writes any of it (each reports an empty list state, so that Flink sees the subtasks of this union
 * state finish together at a stop-with-savepoint or the end of the updates). The state is marked for union
 * redistribution, so on restore, at any parallelism and number of task managers, every writer subtask is handed the
 * one copy, as a stream it may open; only the applier of each task manager opens it and builds the index, once. The
 * write is synchronous: the applier pauses for it (lookups go on, reading the dimension meanwhile).
 *
 * <h2>Its second input: the end of the lookups</h2>
 * Input 2 is the lookup operator's {@link SharedLookupOperator#END_OF_LOOKUPS} side output, broadcast: it carries no
 * records, only the lookups' barriers, watermarks and end. It keeps the writer running until the lookups end (a
 * writer that finished when a bounded update stream ended would hold no state in later checkpoints, and a restored
 * job would not start it: its lookups would find no dimension), and it makes the update path and the lookups one
 * pipelined region, so that a failover restarts both and restores them from one checkpoint.
 *
 * <p>Needs aligned checkpoints: with unaligned ones, the updates in flight at the barrier would be stored per
 * subtask and replayed to subtasks that may not be appliers after a restore, so the operator refuses to start.
 *
 * @param <P> payloads
 */
public final class DimensionWriterOperator<P> extends AbstractStreamOperator<Void>
        implements TwoInputStreamOperator<EncodedUpdates, Void, Void>, BoundedMultiInput {

    private static final long serialVersionUID = 1L;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(DimensionWriterOperator.class);

    private final String dimensionId;
    private final IndexSettings settings;
    private final TypeSerializer<P> payloadSerializer;
    private final int batchSize;
    /** Processing-time flush interval; 0 for none. */
    private final long flushIntervalMillis;
    private final FlushPolicy flushPolicy;
    /** LOAD: the most updates of a batch as the job set it; 0 for the index settings' choice. */
    private final int maxBatch;
    /** LOAD: the most updates of a batch, resolved where the writer starts. */
    private transient int loadBatchMax;

    private transient TaskManagerDimension<P> dimension;
    private transient int subtask;
    private transient int attempt;
    private transient boolean applier;
    /** The updates held, decoded: views of the blocks received. */
    private transient SerializedUpdates pending;
    /** The applier's thread that applies batches, one at a time; null on the other subtasks. */
    private transient ExecutorService applyThread;
    /** Where batches are applied: {@link #applyThread}, or a test's executor. */
    private transient Executor applyExecutor;
    private transient Executor testApplyExecutor;
    /** The batch being applied, or null; and the updates' holder to take turns with {@link #pending}. */
    private transient CompletableFuture<Void> applying;
    private transient SerializedUpdates spare;
    private transient long firstPendingNanos;
    private transient BatchDeadline deadline;
    /** LOAD: where a finished apply's mail hands over what gathered meanwhile. */
    private transient MailboxExecutor mailbox;
    /** This checkpoint's raw operator state holds the dimension: mark it for union redistribution. */
    private transient boolean wroteDimension;

    private transient Counter applied;
    private transient Counter flushes;
    private transient Histogram batchSizes;
    private transient volatile long snapshotMillis;

    /** A writer under {@link FlushPolicy#TIMER}: batches of {@code batchSize}, or due after the flush interval. */
    public DimensionWriterOperator(String dimensionId, IndexSettings settings, TypeSerializer<P> payloadSerializer,
                                   int batchSize, long flushIntervalMillis) {
        this(dimensionId, settings, payloadSerializer, batchSize, flushIntervalMillis, FlushPolicy.TIMER, batchSize);
    }

    /**
     * A writer under {@code flushPolicy}; see the class comment.
     *
     * @param batchSize           TIMER: updates of a batch
     * @param flushIntervalMillis TIMER: how long a batch's first update waits at most; 0 for no timer
     * @param maxBatch            LOAD: the most updates of a batch, but for the rest of the block of updates that
     *                            reaches it (a block holds at most a few thousand); 0 for
     *                            {@link IndexSettings#loadBatchMax} on the writer's task manager
     */
    public DimensionWriterOperator(String dimensionId, IndexSettings settings, TypeSerializer<P> payloadSerializer,
                                   int batchSize, long flushIntervalMillis, FlushPolicy flushPolicy, int maxBatch) {
        if (dimensionId == null || settings == null || payloadSerializer == null || flushPolicy == null) {
            throw new IllegalArgumentException("the dimension id, index settings, payload serializer and flush policy "
                    + "are required");
        }
        if (batchSize < 1 || flushIntervalMillis < 0 || maxBatch < 0) {
            throw new IllegalArgumentException("batchSize must be >= 1, maxBatch >= 0 (0: the index settings' choice) "
                    + "and flushIntervalMillis >= 0, were " + batchSize + ", " + maxBatch + " and "
                    + flushIntervalMillis);
        }
        this.dimensionId = dimensionId;
        this.settings = settings;
        this.payloadSerializer = payloadSerializer;
        this.batchSize = batchSize;
        this.flushIntervalMillis = flushIntervalMillis;
        this.flushPolicy = flushPolicy;
        this.maxBatch = maxBatch;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        // Flink counts a vertex's finished subtasks among those that report state, and aborts a checkpoint of union
        // state that not all of them finished: so every subtask reports this one, always empty
        context.getOperatorStateStore().getListState(new ListStateDescriptor<>("flix-writer", Types.BOOLEAN));
        if (CheckpointingOptions.isUnalignedCheckpointEnabled(
                getContainingTask().getEnvironment().getJobConfiguration())) {
            throw new IllegalStateException("the shared FliX dimension '" + dimensionId + "' needs aligned "
                    + "checkpoints: disable unaligned checkpoints (execution.checkpointing.unaligned.enabled), or "
                    + "use the keyed mode (FlixEnrichment.of)");
        }
        subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        attempt = getRuntimeContext().getTaskInfo().getAttemptNumber();
        final int capacity = batchCapacity();
        pending = new SerializedUpdates(capacity);
        spare = new SerializedUpdates(capacity);
        dimension = TaskManagerDimensions.acquire(getContainingTask().getEnvironment().getTaskManagerInfo(),
                getRuntimeContext().getJobInfo().getJobId(), dimensionId, settings, payloadSerializer, capacity,
                TaskManagerGpus.of(TaskManagerGpus.assignedTo(getRuntimeContext()),
                        settings.backend()));
        ClassLoaderRelease.register(getRuntimeContext());
        loadBatchMax = maxBatch > 0 ? maxBatch : settings.loadBatchMax(dimension.backend());
        applier = dimension.registerWriter(subtask, attempt);
        // this task thread reads the broadcast blocks: a writer that does not apply them leaves their bytes unread
        EncodedUpdatesSerializer.skipBlocksOnThisThread(!applier);
        if (applier) {
            if (testApplyExecutor != null) {
                applyExecutor = testApplyExecutor;
            } else {
                applyThread = Executors.newSingleThreadExecutor(runnable -> {
                    final Thread thread = new Thread(runnable, "flix-apply " + dimensionId + " (" + (subtask + 1)
                            + ")");
                    thread.setDaemon(true);
                    return thread;
                });
                applyExecutor = applyThread;
            }
            if (context.isRestored()) {
                restore(context.getRawOperatorStateInputs());
            } else {
                dimension.startEmpty(payloadSerializer.duplicate(), capacity);
            }
        }
    }

    @Override
    public void open() throws Exception {
        super.open();
        if (flushPolicy == FlushPolicy.TIMER) {
            // read the field at each timer: flush hands the holder to the apply thread and takes the spare one
            deadline = new BatchDeadline(getProcessingTimeService(), flushIntervalMillis, () -> pending.size(),
                    this::flush);
        } else {
            mailbox = getContainingTask().getMailboxExecutorFactory()
                    .createExecutor(getOperatorConfig().getChainIndex());
        }
        final MetricGroup group = getMetricGroup();
        // counted by the apply thread
        applied = group.counter("flixUpdates", new ThreadSafeSimpleCounter());
        flushes = group.counter("flixFlushes", new ThreadSafeSimpleCounter());
        batchSizes = group.histogram("flixBatchSize", new DescriptiveStatisticsHistogram(1000));
        group.gauge("flixApplier", () -> applier ? 1 : 0);
        group.gauge("flixIndexSize", dimension::size);
        group.gauge("flixRowBytes", dimension::payloadBytes);
        group.gauge("flixBackend", dimension::backendName);
        group.gauge("flixDevices", () -> DimensionIndex.describe(dimension.devices()));
        TaskManagerGauges.register(group, TaskManagerGpus.assignedTo(getRuntimeContext()));
        group.gauge("flixIndexBytes", dimension::indexBytes);
        group.gauge("flixDimensionPendingUpdates", dimension::pendingUpdates);
        group.gauge("flixDimensionLagMillis", dimension::lagMillis);
        group.gauge("flixSnapshotMillis", () -> snapshotMillis);
    }

    private int batchCapacity() {
        return Math.min(flushPolicy == FlushPolicy.TIMER ? batchSize : maxBatch > 0 ? maxBatch : Integer.MAX_VALUE,
                1 << 16);
    }

    private void restore(Iterable<StatePartitionStreamProvider> partitions) throws Exception {
        final long start = System.nanoTime();
        final KeyGroupSnapshotCodec.Reader<P> reader = new KeyGroupSnapshotCodec.Reader<>(
                payloadSerializer.duplicate(), getUserCodeClassloader(), batchCapacity());
        int copies = 0;
        for (StatePartitionStreamProvider partition : partitions) {
            if (++copies > 1) {
                throw new IllegalStateException("the state of the shared FliX dimension '" + dimensionId
                        + "' holds more than one copy of the dimension; it was not written by this operator");
            }
            try (InputStream stream = partition.getStream()) {
                reader.readKeyGroup(0, new BlockDataInput(stream));
            }
        }
        final long read = System.nanoTime();
        // the writer writes the dimension in key order: the index then skips its sort
        dimension.start(reader.payloads(), reader.keys(), reader.values(), reader.count(), reader.keysAscending());
        LOG.info("FliX shared dimension '{}' restored on subtask {}: {} keys in {} ms ({} ms reading the copy, {} ms "
                + "building the index)", dimensionId, subtask, reader.count(), (System.nanoTime() - start) / 1_000_000,
                (read - start) / 1_000_000, (System.nanoTime() - read) / 1_000_000);
    }

    @Override
    public void processElement2(StreamRecord<Void> element) {
        // the lookups' side output carries no records
    }

    /** The update stream ended: what is held is applied now, not when the lookups end too. */
    @Override
    public void endInput(int inputId) throws Exception {
        if (inputId == 1) {
            flushAndWait();
        }
    }

    @Override
    public void processElement1(StreamRecord<EncodedUpdates> element) throws Exception {
        if (!applier) {
            return;
        }
        final boolean wasEmpty = pending.size() == 0;
        element.getValue().decodeInto(pending);
        final int count = pending.size();
        if (count == 0) {
            return;
        }
        if (wasEmpty) {
            firstPendingNanos = System.nanoTime();
        }
        dimension.held(count, firstPendingNanos);
        if (flushPolicy == FlushPolicy.LOAD) {
            // a full batch waits for the one being applied: the mail of its end hands this one over
            while (applying != null && !applying.isDone() && pending.size() >= loadBatchMax) {
                mailbox.yield();
            }
            if (pending.size() > 0 && (applying == null || applying.isDone())) {
                flush();
            }
        } else if (count >= batchSize) {
            flush();
        } else if (wasEmpty) {
            deadline.recordBuffered(1);
        }
    }

    /**
     * LOAD, a mail on the task's thread once an apply is done: fails the task where it failed, else hands over what
     * gathered meanwhile.
     */
    private void applied() throws Exception {
        if (dimension == null) {
            return; // closed
        }
        if (applying != null && applying.isDone()) {
            awaitApplied();
        }
        if (applying == null && pending != null && pending.size() > 0) {
            flush();
        }
    }


    /**
     * Hands the held updates to the apply thread, once the batch before them is applied: they are applied while this
     * thread receives the next ones.
     */
    void flush() throws Exception {
        awaitApplied();
        final int n = pending.size();
        if (n == 0) {
            return;
        }
        final SerializedUpdates batch = pending;
        pending = spare;
        spare = batch;
        dimension.applying(n, firstPendingNanos);
        dimension.held(0, 0);
        applying = CompletableFuture.runAsync(() -> {
            try {
                dimension.apply(batch);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } finally {
                batch.clear();
                dimension.applying(0, 0);
            }
            applied.inc(n);
            flushes.inc();
            batchSizes.update(n);
        }, applyExecutor);
        if (mailbox != null) {
            applying.whenComplete((done, failure) -> {
                try {
                    mailbox.execute(this::applied, "FliX dimension batch applied");
                } catch (RejectedExecutionException closing) {
                    // the task is ending: what is held was applied by finish, or is dropped with the task
                }
            });
        }
    }

    /** Applies every update held and waits until they are: every update received is applied on return. */
    void flushAndWait() throws Exception {
        flush();
        awaitApplied();
    }

    /** Waits for the batch being applied, if any; throws what its apply threw. On the task thread. */
    void awaitApplied() throws Exception {
        final CompletableFuture<Void> batch = applying;
        if (batch == null) {
            return;
        }
        applying = null;
        try {
            batch.join();
        } catch (CompletionException e) {
            final Throwable cause = e.getCause();
            if (cause instanceof UncheckedIOException io) {
                throw io.getCause();
            }
            if (cause instanceof Exception exception) {
                throw exception;
            }
            if (cause instanceof Error error) {
                throw error;
            }
            throw e;
        }
    }

    /** Nothing held crosses a watermark of the update stream. */
    @Override
    public void processWatermark1(Watermark mark) throws Exception {
        flushAndWait();
        super.processWatermark1(mark);
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        flushAndWait();
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    @Override
    public void finish() throws Exception {
        flushAndWait();
        super.finish();
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        flushAndWait();
        wroteDimension = false;
        if (!applier || !dimension.hostsWriter(0)) {
            return;
        }
        final long start = System.nanoTime();
        final OperatorStateCheckpointOutputStream out = context.getRawOperatorStateOutput();
        out.startNewPartition();
        dimension.writeSnapshot(out);
        wroteDimension = true;
        snapshotMillis = (System.nanoTime() - start) / 1_000_000;
        LOG.info("FliX shared dimension '{}': checkpoint {} holds {} keys, written in {} ms", dimensionId,
                context.getCheckpointId(), dimension.size(), snapshotMillis);
    }

    /** Marks the raw operator state that holds the dimension for union redistribution: see the class comment. */
    @Override
    public OperatorSnapshotFutures snapshotState(long checkpointId, long timestamp, CheckpointOptions options,
                                                 CheckpointStreamFactory factory) throws Exception {
        final OperatorSnapshotFutures futures = super.snapshotState(checkpointId, timestamp, options, factory);
        if (wroteDimension) {
            wroteDimension = false;
            futures.setOperatorStateRawFuture(asUnion(futures.getOperatorStateRawFuture()));
        }
        return futures;
    }

    /**
     * The raw operator state's future, its handle marked for union redistribution. The future closes the stream and
     * makes the handle when the checkpoint's asynchronous part runs it, so it is wrapped, not awaited here.
     */
    private static RunnableFuture<SnapshotResult<OperatorStateHandle>> asUnion(
            RunnableFuture<SnapshotResult<OperatorStateHandle>> written) {
        return new FutureTask<>(() -> {
            if (!written.isDone()) {
                written.run();
            }
            final OperatorStateHandle handle = written.get().getJobManagerOwnedSnapshot();
            final OperatorStateHandle.StateMetaInfo partitions = handle.getStateNameToPartitionOffsets()
                    .get(DefaultOperatorStateBackend.DEFAULT_OPERATOR_STATE_NAME);
            // mutable: at an unchanged parallelism, Flink's repartitioner adds to the map of the handle it restores
            final Map<String, OperatorStateHandle.StateMetaInfo> union = new HashMap<>();
            union.put(DefaultOperatorStateBackend.DEFAULT_OPERATOR_STATE_NAME, new OperatorStateHandle.StateMetaInfo(
                    partitions.getOffsets(), OperatorStateHandle.Mode.UNION));
            return SnapshotResult.of(new OperatorStreamStateHandle(union, handle.getDelegateStateHandle()));
        }) {
            @Override
            public boolean cancel(boolean mayInterruptIfRunning) {
                written.cancel(mayInterruptIfRunning);
                return super.cancel(mayInterruptIfRunning);
            }
        };
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            stopApplying();
            EncodedUpdatesSerializer.skipBlocksOnThisThread(false);
            if (dimension != null) {
                dimension.unregisterWriter(subtask, attempt);
                TaskManagerDimensions.release(dimension);
                dimension = null;
            }
        }
    }

    /**
     * Lets the batch being applied finish (its failure, if any, was or will be reported by the dimension) and ends
     * the apply thread, before the dimension is let go: an index is never closed under an apply.
     */
    private void stopApplying() {
        if (applyThread == null) {
            return;
        }
        if (applying != null) {
            applying.handle((done, failure) -> null).join(); // uninterruptible
            applying = null;
        }
        applyThread.shutdown();
        applyThread = null;
    }

    // ---- for tests ----

    /** Applies the batches on {@code executor} instead of a thread of the writer's own; before the harness opens. */
    void setApplyExecutor(Executor executor) {
        this.testApplyExecutor = executor;
    }

    boolean isApplier() {
        return applier;
    }

    /** LOAD: the most updates of a batch, as resolved where the writer started. */
    int loadBatchMax() {
        return loadBatchMax;
    }

    TaskManagerDimension<P> dimension() {
        return dimension;
    }
}
