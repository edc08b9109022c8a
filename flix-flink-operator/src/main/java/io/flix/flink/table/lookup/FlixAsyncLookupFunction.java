package io.flix.flink.table.lookup;

import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.table.snapshot.SnapshotWriter;
import io.flix.flink.table.spec.DimensionSpec;
import io.flix.flink.taskmanager.TaskManagerGauges;
import io.flix.flink.taskmanager.TaskManagerGpus;

import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.ThreadSafeSimpleCounter;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.AsyncLookupFunction;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.types.logical.LogicalType;

import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;

/**
 * The {@code 'flix'} table's lookups: gathers the lookups of this subtask into a batch ({@link ProbeBatcher}),
 * answers it against the task manager's shared dimension (under {@code 'lookup.batch-policy' = 'load'}, the default:
 * at once on the subtask's dispatcher thread when none of its batches is in flight, else when the one in flight
 * completes; under both policies when it holds {@code lookup.batch-size} lookups, on the subtask's thread, or when
 * its first lookup has waited {@code lookup.linger}, on the dimension's linger timer thread), and completes each lookup's
 * future with the key's row (a collection of 0 or 1 rows): with {@code 'lookup.match'} = 'floor' or 'ceiling', the
 * row of the largest key {@code <=} it or the smallest key {@code >=} it, over the whole dimension. The batch sees
 * every changelog update applied before it was answered.
 *
 * <p>Lookups by the primary key only; a join that also equates other columns of the table passes them as further
 * lookup keys, and the row is returned only where those are equal too, by SQL equality ({@link SqlEquality}). A
 * null key, or a null in another lookup key, finds nothing.
 *
 * <p>{@link #open} acquires the shared dimension and waits until its changelog is applied up to where it ended
 * when the dimension opened ({@code lookup.bootstrap-timeout}). A lookup after {@link #close} completes
 * exceptionally with an {@link IllegalStateException} that says so.
 */
public final class FlixAsyncLookupFunction extends AsyncLookupFunction {

    private static final long serialVersionUID = 1L;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FlixAsyncLookupFunction.class);

    private final DimensionSpec spec;
    /** Position in the table's row of each field of the key row. */
    private final int[] lookupFields;
    /** Position of the primary key in the key row. */
    private final int keyPosition;
    /** Batch size, linger and match. */
    private final LookupOptions lookup;

    /** Runs the linger of a batch; the dimension's timer unless a test sets one before {@link #open}. */
    private transient ScheduledExecutorService lingerTimer;
    /** Gathers the lookups into batches while open; null before {@link #open} and after {@link #close}. */
    private transient volatile ProbeBatcher<Lookup> batcher;
    /** Sends batches under the load policy; set by a test before {@link #open}. */
    private transient java.util.concurrent.Executor testDispatcher;
    /** The dispatcher thread this function started, stopped in {@link #close}. */
    private transient ProbeDispatcher ownDispatcher;
    /** The shared dimension while open; null before {@link #open} and after {@link #close}. */
    private transient SharedDimension dimension;
    /** Whether this subtask makes its task manager write the table's snapshots ({@link SnapshotWriter}). */
    private transient boolean snapshotRole;
    /** Further lookup keys: their fields in the table's row and in the key row, and their equality. */
    private transient RowData.FieldGetter[] extraGetters;
    private transient RowData.FieldGetter[] extraKeyGetters;
    private transient SqlEquality[] extraEqualities;

    private transient Counter lookups;
    private transient Counter batches;
    private transient Histogram batchSizes;
    private transient Histogram latencies;
    private transient SharedDimension.LookupMetrics answered;

    public FlixAsyncLookupFunction(DimensionSpec spec, int[] lookupFields, int keyPosition, LookupOptions lookup) {
        this.spec = spec;
        this.lookupFields = lookupFields;
        this.keyPosition = keyPosition;
        this.lookup = lookup;
    }

    @Override
    public void open(FunctionContext context) throws Exception {
        super.open(context);
        extraGetters = new RowData.FieldGetter[lookupFields.length - 1];
        extraKeyGetters = new RowData.FieldGetter[lookupFields.length - 1];
        extraEqualities = new SqlEquality[lookupFields.length - 1];
        int extra = 0;
        for (int j = 0; j < lookupFields.length; j++) {
            if (j == keyPosition) {
                continue;
            }
            final LogicalType type = spec.rowType().getTypeAt(lookupFields[j]);
            extraGetters[extra] = RowData.createFieldGetter(type, lookupFields[j]);
            extraKeyGetters[extra] = RowData.createFieldGetter(type, j);
            extraEqualities[extra] = SqlEquality.of(type);
            extra++;
        }
        final SharedDimension acquired = SharedDimensions.acquire(spec, context);
        registerMetrics(context.getMetricGroup(), acquired);
        TaskManagerGauges.register(context.getMetricGroup(), TaskManagerGpus.assignedTo(context));
        snapshotRole = acquired.snapshots() != null && acquired.snapshots().takeRole(isFirstSubtask(context));
        try {
            acquired.awaitBootstrap();
        } catch (Exception e) {
            release(acquired);
            throw e;
        }
        dimension = acquired;
        batcher = new ProbeBatcher<>(lookup.batchSize(), lookup.linger().toNanos(),
                lingerTimer != null ? lingerTimer : acquired.lingerTimer, dispatcher(context),
                (batch, firstNanos) -> send(acquired, batch, firstNanos));
    }

    /** Whether this is subtask 0 of its lookup join; a function opened outside a job is alone, so it is. */
    private static boolean isFirstSubtask(FunctionContext context) {
        try {
            return context.getTaskInfo().getIndexOfThisSubtask() == 0;
        } catch (TableException e) {
            return true;
        }
    }

    private void release(SharedDimension held) throws InterruptedException {
        if (snapshotRole) {
            snapshotRole = false;
            held.snapshots().dropRole();
        }
        SharedDimensions.release(held);
    }

    /** Sets the timer that runs batches' linger, in place of the dimension's; before {@link #open}, for tests. */
    public void setLingerTimer(ScheduledExecutorService timer) {
        this.lingerTimer = timer;
    }

    /**
     * Sets where batches that follow the load are sent, in place of a thread of this subtask; before {@link #open},
     * for tests (only with {@code 'lookup.batch-policy' = 'load'}).
     */
    public void setDispatcher(java.util.concurrent.Executor executor) {
        this.testDispatcher = executor;
    }

    /** Under the load policy, the thread (or the test's executor) that sends batches; null under 'linger'. */
    private java.util.concurrent.Executor dispatcher(FunctionContext context) {
        if (!lookup.followLoad()) {
            return null;
        }
        if (testDispatcher != null) {
            return testDispatcher;
        }
        ownDispatcher = new ProbeDispatcher("FliX lookup batches of " + spec.describeChangelog()
                + " (" + subtaskName(context) + ")");
        return ownDispatcher;
    }

    public static String subtaskName(FunctionContext context) {
        try {
            return context.getTaskInfo().getTaskNameWithSubtasks();
        } catch (RuntimeException e) {
            return "outside a job";
        }
    }

    private void registerMetrics(MetricGroup group, SharedDimension d) {
        lookups = group.counter("flixLookups");
        // a batch is counted by the thread that sends it: the subtask's or the linger timer's
        batches = group.counter("flixLookupBatches", new ThreadSafeSimpleCounter());
        batchSizes = group.histogram("flixLookupBatchSize", new DescriptiveStatisticsHistogram(1000));
        latencies = group.histogram("flixLookupLatencyNanos", new DescriptiveStatisticsHistogram(1000));
        group.gauge("flixIndexSize", d::indexSize);
        group.gauge("flixRowBytes", d::rowBytes);
        group.gauge("flixBackend", d::backendName);
        group.gauge("flixDevices", d::devices);
        group.gauge("flixChangelogRecordsApplied", d::appliedRecords);
        group.gauge("flixChangelogRecordsSkipped", d::skippedRecords);
        group.gauge("flixBootstrapMillis", d::bootstrapMillis);
        group.gauge("flixChangelogRecordsRead", d::recordsRead);
        SnapshotWriter.registerGauges(group, d.snapshots(), d::restoredKeys);
        final Histogram latencyHistogram = latencies;
        answered = (size, latencyNanos) -> latencyHistogram.update(latencyNanos);
    }

    /** One lookup: its key and its answer. */
    private record Lookup(long key, CompletableFuture<Collection<RowData>> future) {
    }

    @Override
    public CompletableFuture<Collection<RowData>> asyncLookup(RowData keyRow) {
        final ProbeBatcher<Lookup> gathering = batcher;
        if (gathering == null) {
            return closed();
        }
        if (keyRow.isNullAt(keyPosition)) {
            return CompletableFuture.completedFuture(Collections.emptyList());
        }
        final CompletableFuture<Collection<RowData>> found = new CompletableFuture<>();
        final CompletableFuture<Collection<RowData>> result;
        if (extraGetters.length == 0) {
            result = found;
        } else {
            final Object[] wanted = otherKeys(keyRow);
            result = found.thenApply(rows -> matchingOthers(rows, wanted));
        }
        lookups.inc();
        if (!gathering.add(new Lookup(keyRow.getLong(keyPosition), found))) {
            return closed();
        }
        return result;
    }

    private CompletableFuture<Collection<RowData>> closed() {
        return CompletableFuture.failedFuture(new IllegalStateException("a lookup on the 'flix' table ("
                + spec.describeChangelog() + ") after its lookup function was closed, or before it was opened"));
    }

    /** The values of the lookup keys other than the primary key, taken now: the key row may be reused. */
    private Object[] otherKeys(RowData keyRow) {
        final Object[] wanted = new Object[extraKeyGetters.length];
        for (int j = 0; j < wanted.length; j++) {
            wanted[j] = extraKeyGetters[j].getFieldOrNull(keyRow);
        }
        return wanted;
    }

    /** The row, where the other lookup keys equal its columns too (SQL equality: a null equals nothing). */
    private Collection<RowData> matchingOthers(Collection<RowData> rows, Object[] wanted) {
        if (rows.isEmpty()) {
            return rows;
        }
        final RowData row = rows.iterator().next();
        for (int j = 0; j < wanted.length; j++) {
            final Object stored = extraGetters[j].getFieldOrNull(row);
            if (wanted[j] == null || stored == null || !extraEqualities[j].equal(wanted[j], stored)) {
                return Collections.emptyList();
            }
        }
        return rows;
    }

    /** Answers a batch on this thread (see {@link SharedDimension#submit}). */
    @SuppressWarnings("unchecked")
    private void send(SharedDimension target, List<Lookup> batch, long firstNanos) {
        final int n = batch.size();
        final long[] keys = new long[n];
        final CompletableFuture<Collection<RowData>>[] futures = new CompletableFuture[n];
        for (int i = 0; i < n; i++) {
            keys[i] = batch.get(i).key;
            futures[i] = batch.get(i).future;
        }
        batches.inc();
        batchSizes.update(n);
        target.submit(new SharedDimension.LookupBatch(lookup.match(), keys, futures, n, firstNanos, answered));
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            final ProbeBatcher<Lookup> gathering = batcher;
            batcher = null;
            if (gathering != null) {
                for (Lookup unsent : gathering.close()) {
                    unsent.future.completeExceptionally(new IllegalStateException("the 'flix' lookup function ("
                            + spec.describeChangelog() + ") closed before this lookup was sent"));
                }
            }
            final ProbeDispatcher stopping = ownDispatcher;
            ownDispatcher = null;
            if (stopping != null) {
                stopping.close(); // before the dimension goes: the batches handed over finish first
            }
            final SharedDimension held = dimension;
            dimension = null;
            if (held != null) {
                LOG.info("FliX lookup subtask closed: {} lookups in {} batches", lookups.getCount(),
                        batches.getCount());
                release(held);
            }
        }
    }

    /** What this function's table is; for tests. */
    public DimensionSpec spec() {
        return spec;
    }

    /** The shared dimension this subtask holds; for tests. */
    public SharedDimension dimension() {
        return dimension;
    }
}
