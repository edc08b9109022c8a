package io.flix.flink.table;

import io.flix.flink.dimension.IndexLookups;
import io.flix.flink.payload.PayloadStore;
import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.flink.table.lookup.ProbeBatcher;
import io.flix.flink.table.lookup.ProbeDispatcher;
import io.flix.flink.table.spec.DimensionSpec;
import io.flix.index.RangeResult;

import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.ThreadSafeSimpleCounter;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.catalog.DataTypeFactory;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.AsyncTableFunction;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.SpecializedFunction;
import org.apache.flink.table.functions.UserDefinedFunction;
import org.apache.flink.table.runtime.connector.source.LookupRuntimeProviderContext;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.inference.CallContext;
import org.apache.flink.table.types.inference.InputTypeStrategies;
import org.apache.flink.table.types.inference.TypeInference;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.utils.TypeConversions;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;

/**
 * Range lookups in SQL: for each probe, the rows of a {@code 'flix'} table whose keys lie in {@code [lo, hi]}, at
 * most {@code max_rows} of them, in key order.
 * <pre>{@code
 * CREATE CATALOG flix WITH ('type' = 'flix');
 * USE CATALOG flix;
 * CREATE TABLE products (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'flix', ...);
 * SET 'table.exec.async-table.retry-strategy' = 'NO_RETRY';
 * SET 'table.exec.async-table.max-concurrent-operations' = '1024';
 *
 * SELECT q.query_id, p.id, p.name
 * FROM queries AS q, LATERAL TABLE(FLIX_RANGE('products', q.lo, q.hi, 10)) AS p;
 *
 * SELECT q.query_id, p.id, p.name
 * FROM queries AS q LEFT JOIN LATERAL TABLE(FLIX_RANGE_OR_NULL('products', q.lo, q.hi, 10)) AS p ON TRUE;
 * }</pre>
 *
 * <h2>Semantics</h2>
 * {@code FLIX_RANGE(table, lo, hi, max_rows)}: {@code table} a string literal naming a {@code 'flix'} table of
 * the function's catalog ({@code 'products'} in the function's database, or {@code 'db.products'}); {@code lo}
 * and {@code hi} BIGINT expressions of the probe, both bounds included; {@code max_rows} an INT literal from 1 to
 * {@value #MAX_ROWS_PER_PROBE}. The rows are the table's whole physical rows, with its column names and types,
 * the first {@code max_rows} of the range in ascending key order. A range with {@code lo > hi} is empty (as
 * {@code BETWEEN} is), and so is one with a NULL bound; neither is an error. A row of the range that does not
 * deserialize fails its probe. Each probe sees the table as the changelog had left it when its batch was answered:
 * every changelog batch applied before, none applied after (see the package documentation, Visibility).
 * <p>{@code FLIX_RANGE_OR_NULL} answers the same, except that a probe whose range holds no row gets one row of
 * NULLs (the key column included, which a stored row never has NULL): a probe is never lost, whichever way it is
 * joined. Use it where probes without rows must stay: Flink 2.2.0 drops the probe of an asynchronous table
 * function that answers no row even under {@code LEFT JOIN LATERAL ... ON TRUE} (its asynchronous correlate ignores
 * the join type: FLINK-37988), so {@code FLIX_RANGE} under a LEFT JOIN keeps only probes with rows.
 * {@code WHERE p.id IS NULL} finds the probes without rows. (A synchronous table function, which Flink does pad
 * under a LEFT JOIN, would cost an index call per probe: its rows must be out before its {@code eval} returns, so
 * its probes cannot wait for a batch.)
 *
 * <h2>Batches</h2>
 * Both are {@link AsyncTableFunction}s: Flink 2.2's planner runs an asynchronous table function under
 * {@code LATERAL TABLE} as an asynchronous correlate, with no option to turn on. Each subtask gathers its probes
 * into batches as the lookup join does ({@link ProbeBatcher}, {@code 'lookup.batch-policy'}): a batch goes to the
 * task manager's shared dimension (the one the table's lookup joins use) at once when none of the subtask's is in
 * flight (the load policy, the default), else when it completes, and at the latest when it holds {@code min('lookup.batch-size',
 * 'table.exec.async-table.max-concurrent-operations')} probes (Flink keeps no more in flight per subtask, default
 * 10: raise it to the batch size) or when its first probe has waited {@code 'lookup.linger'}; on the GPU backend,
 * the batches of several subtasks meet in one index call. A batch is answered by index calls of at most
 * {@value #MAX_PAIRS_PER_CALL} pairs. Flink keeps the probes' order on output.
 * <p>{@code FLIX_RANGE} is refused when it is planned unless {@code 'table.exec.async-table.retry-strategy' =
 * 'NO_RETRY'}: Flink's default retry strategy asks an asynchronous table function again (after
 * {@code 'table.exec.async-table.retry-delay'}, up to {@code 'table.exec.async-table.max-retries'} times) whenever
 * its answer is empty, and an empty range is an answer: every probe without rows would wait for all its retries.
 * {@code FLIX_RANGE_OR_NULL} never answers nothing, so it runs under any retry strategy.
 *
 * <h2>How the function finds its table</h2>
 * The table's own options are the only source of truth: the function takes the table's name and reads its
 * definition from the catalog when the query is planned, and builds the same dimension the table's lookup join
 * builds (its options, columns and key decide which subtasks share one dimension per task manager). In Flink 2.2
 * an ordinary user-defined function cannot do that: its type inference sees a {@link DataTypeFactory} and its
 * call's literals, {@link SpecializedFunction} adds the session's configuration, and at run time a
 * {@link FunctionContext} offers job parameters; none of them reaches the catalog. A function's
 * {@code CREATE FUNCTION ... WITH} options do not reach its instance either, and a process table function's
 * {@code TABLE} argument would scan the table, which a {@code 'flix'} table does not offer. Flink's one way for
 * connector code to see a table when a query is planned, other than as the table's source, is a catalog: a
 * catalog creates the functions it holds ({@code Catalog#getFunctionDefinitionFactory}). So these functions come
 * with the {@code 'flix'} catalog ({@link FlixCatalog}), an in-memory catalog like Flink's default one, and read
 * the tables declared in it. (Flink 2.2's {@code VECTOR_SEARCH} resolves a table argument the same way inside the
 * planner, but only for ARRAY&lt;FLOAT|DOUBLE&gt; search columns.) The alternative, a lookup join that passes a
 * range's two bounds as lookup keys, would need columns that are not the table's.
 *
 * <h2>Metrics</h2>
 * On each subtask's metric group: counters {@code flixRangeProbes}, {@code flixRangeBatches},
 * {@code flixRangeRows}; histograms {@code flixRangeBatchSize} and {@code flixRangeLatencyNanos} (from a batch's
 * first probe to its answer).
 */
public final class FlixRangeFunction extends AsyncTableFunction<RowData> implements SpecializedFunction {

    private static final long serialVersionUID = 1L;

    /** The function that answers a range's rows, none for an empty range. */
    public static final String NAME = "flix_range";
    /** The function that answers a range's rows, one row of NULLs for an empty range. */
    public static final String OR_NULL_NAME = "flix_range_or_null";
    /** The most rows one probe may ask for: one probe's rows are one collection Flink holds until it emits them. */
    public static final int MAX_ROWS_PER_PROBE = 65_536;
    /** The most pairs one index call of a batch may return, so that batches gathered from many subtasks fit. */
    static final int MAX_PAIRS_PER_CALL = 1 << 20;

    private static final int TABLE = 0;
    private static final int MAX_ROWS = 3;

    private final boolean orNull;

    // ---- when planned: null in the instance that runs ----
    /** The catalog and database whose tables the function reads. */
    private final transient FlixCatalog catalog;
    private final transient String database;
    private final transient ClassLoader classLoader;

    // ---- when it runs: set by specialize ----
    private final DimensionSpec spec;
    private final int maxRows;
    private final int batchSize;
    private final long lingerNanos;
    /** Whether batches follow the load ({@code 'lookup.batch-policy' = 'load'}, see {@link ProbeBatcher}). */
    private final boolean followLoad;

    /** Runs batches' linger; the dimension's timer unless a test sets one before {@link #open}. */
    private transient ScheduledExecutorService lingerTimer;
    private transient volatile ProbeBatcher<Probe> batcher;
    /** Sends batches under the load policy; set by a test before {@link #open}. */
    private transient java.util.concurrent.Executor testDispatcher;
    /** The dispatcher thread this function started, stopped in {@link #close}. */
    private transient ProbeDispatcher ownDispatcher;
    private transient SharedDimension dimension;
    private transient Counter probes;
    private transient Counter batches;
    private transient Counter rowsAnswered;
    private transient Histogram batchSizes;
    private transient Histogram latencies;

    /**
     * Made by a class name (a {@code CREATE FUNCTION} outside a {@code 'flix'} catalog): refuses to be planned,
     * saying where the function comes from.
     */
    public FlixRangeFunction() {
        this(false, null, null, null);
    }

    /** The function as the catalog hands it to the planner. */
    FlixRangeFunction(boolean orNull, FlixCatalog catalog, String database, ClassLoader classLoader) {
        this.orNull = orNull;
        this.catalog = catalog;
        this.database = database;
        this.classLoader = classLoader;
        this.spec = null;
        this.maxRows = 0;
        this.batchSize = 0;
        this.lingerNanos = 0;
        this.followLoad = true;
    }

    /** The function as it runs: a table's dimension and the probes' limit. */
    FlixRangeFunction(boolean orNull, DimensionSpec spec, int maxRows, int batchSize, long lingerNanos) {
        this(orNull, spec, maxRows, batchSize, lingerNanos, true);
    }

    /** The function as it runs, with its batch policy. */
    FlixRangeFunction(boolean orNull, DimensionSpec spec, int maxRows, int batchSize, long lingerNanos,
                      boolean followLoad) {
        this.followLoad = followLoad;
        this.orNull = orNull;
        this.catalog = null;
        this.database = null;
        this.classLoader = null;
        this.spec = spec;
        this.maxRows = maxRows;
        this.batchSize = batchSize;
        this.lingerNanos = lingerNanos;
    }

    private String sqlName() {
        return orNull ? "FLIX_RANGE_OR_NULL" : "FLIX_RANGE";
    }

    // ---- planning ----

    @Override
    public TypeInference getTypeInference(DataTypeFactory typeFactory) {
        return TypeInference.newBuilder()
                .inputTypeStrategy(InputTypeStrategies.sequence(
                        List.of("table", "lo", "hi", "max_rows"),
                        List.of(InputTypeStrategies.and(InputTypeStrategies.explicit(DataTypes.STRING()),
                                        InputTypeStrategies.LITERAL),
                                InputTypeStrategies.explicit(DataTypes.BIGINT()),
                                InputTypeStrategies.explicit(DataTypes.BIGINT()),
                                InputTypeStrategies.and(InputTypeStrategies.explicit(DataTypes.INT()),
                                        InputTypeStrategies.LITERAL))))
                .outputTypeStrategy(call -> Optional.of(outputType(call)))
                .build();
    }

    /**
     * The table's physical row (every field nullable for {@code FLIX_RANGE_OR_NULL}), checking the call: from the
     * catalog when planned, from the dimension in the instance that runs (the code generator asks it again).
     */
    private DataType outputType(CallContext call) {
        maxRowsOf(call);
        final RowType row = spec != null ? spec.rowType()
                : (RowType) table(call).getResolvedSchema().toPhysicalRowDataType().getLogicalType();
        return TypeConversions.fromLogicalToDataType(orNull ? nullableFields(row) : row).bridgedTo(RowData.class);
    }

    private static RowType nullableFields(RowType row) {
        final List<RowType.RowField> fields = new ArrayList<>();
        for (RowType.RowField field : row.getFields()) {
            fields.add(new RowType.RowField(field.getName(), field.getType().copy(true)));
        }
        return new RowType(row.isNullable(), fields);
    }

    private ResolvedCatalogTable table(CallContext call) {
        requireCatalog();
        final String name = call.getArgumentValue(TABLE, String.class).orElseThrow(() -> new ValidationException(
                sqlName() + "'s first argument must name a table: a string literal, was NULL"));
        return catalog.rangeTable(sqlName(), database, name);
    }

    private void requireCatalog() {
        if (catalog == null) {
            throw new ValidationException(sqlName() + " comes with a 'flix' catalog, which holds the tables it "
                    + "reads: CREATE CATALOG flix WITH ('type' = 'flix'), create the 'flix' table in it, and call "
                    + "the function there (USE CATALOG flix, or flix.<database>."
                    + sqlName().toLowerCase(Locale.ROOT) + "); it cannot be created by its class name");
        }
    }

    private int maxRowsOf(CallContext call) {
        final Integer value = call.getArgumentValue(MAX_ROWS, Integer.class).orElseThrow(() ->
                new ValidationException(sqlName() + "'s fourth argument, the most rows per probe, must be an INT "
                        + "literal from 1 to " + MAX_ROWS_PER_PROBE + ", was NULL"));
        if (value < 1 || value > MAX_ROWS_PER_PROBE) {
            throw new ValidationException(sqlName() + "'s fourth argument, the most rows per probe, must be from 1 "
                    + "to " + MAX_ROWS_PER_PROBE + ", was " + value
                    + (value > MAX_ROWS_PER_PROBE ? ": page through a larger range with successive ranges" : ""));
        }
        return value;
    }

    /** The instance that runs: the table's dimension, read when the query is planned. */
    @Override
    public UserDefinedFunction specialize(SpecializedContext context) {
        requireCatalog();
        final CallContext call = context.getCallContext();
        final int rows = maxRowsOf(call);
        final ReadableConfig config = context.getConfiguration();
        final ExecutionConfigOptions.RetryStrategy retries =
                config.get(ExecutionConfigOptions.TABLE_EXEC_ASYNC_TABLE_RETRY_STRATEGY);
        if (!orNull && retries != ExecutionConfigOptions.RetryStrategy.NO_RETRY) {
            throw new ValidationException(sqlName() + " needs '"
                    + ExecutionConfigOptions.TABLE_EXEC_ASYNC_TABLE_RETRY_STRATEGY.key() + "' = 'NO_RETRY', was '"
                    + retries + "': Flink asks an asynchronous table function again whenever its answer is empty, "
                    + "and an empty range is an answer. (" + OR_NULL_NAME.toUpperCase(Locale.ROOT)
                    + " runs under any retry strategy: it answers an empty range with one row of NULLs.)");
        }
        final String name = call.getArgumentValue(TABLE, String.class).orElseThrow();
        final FlixLookupTableSource source = catalog.rangeSource(sqlName(), database, name, config, classLoader);
        final DimensionSpec dimensionSpec =
                source.dimensionSpec(new LookupRuntimeProviderContext(new int[][] {{source.keyIndex()}}, false));
        final int inFlight = config.get(ExecutionConfigOptions.TABLE_EXEC_ASYNC_TABLE_MAX_CONCURRENT_OPERATIONS);
        return new FlixRangeFunction(orNull, dimensionSpec, rows, Math.max(1, Math.min(source.lookup().batchSize(),
                inFlight)), source.lookup().linger().toNanos(), source.lookup().followLoad());
    }

    @Override
    public boolean isDeterministic() {
        return false; // the table changes as its changelog moves
    }

    // ---- running ----

    /** One probe: its range and its answer. */
    private record Probe(long lo, long hi, CompletableFuture<Collection<RowData>> future) {
    }

    @Override
    public void open(FunctionContext context) throws Exception {
        super.open(context);
        if (spec == null) {
            throw new IllegalStateException(sqlName() + " runs only as the planner made it from a 'flix' "
                    + "catalog's function");
        }
        final SharedDimension acquired = SharedDimensions.acquire(spec, context);
        registerMetrics(context.getMetricGroup());
        try {
            acquired.awaitBootstrap();
        } catch (Exception e) {
            SharedDimensions.release(acquired);
            throw e;
        }
        dimension = acquired;
        final java.util.concurrent.Executor dispatcher;
        if (!followLoad) {
            dispatcher = null;
        } else if (testDispatcher != null) {
            dispatcher = testDispatcher;
        } else {
            ownDispatcher = new ProbeDispatcher(sqlName() + " batches of " + spec.describeChangelog() + " ("
                    + FlixAsyncLookupFunction.subtaskName(context) + ")");
            dispatcher = ownDispatcher;
        }
        batcher = new ProbeBatcher<>(batchSize, lingerNanos, lingerTimer != null ? lingerTimer
                : acquired.lingerTimer, dispatcher, (batch, firstNanos) -> send(acquired, batch, firstNanos));
    }

    /** Sets where batches that follow the load are sent, in place of a thread of this subtask; before {@link #open}. */
    void setDispatcher(java.util.concurrent.Executor executor) {
        this.testDispatcher = executor;
    }

    /** Sets the timer that runs batches' linger, in place of the dimension's; before {@link #open}, for tests. */
    void setLingerTimer(ScheduledExecutorService timer) {
        this.lingerTimer = timer;
    }

    private void registerMetrics(MetricGroup group) {
        probes = group.counter("flixRangeProbes", new ThreadSafeSimpleCounter());
        batches = group.counter("flixRangeBatches", new ThreadSafeSimpleCounter());
        rowsAnswered = group.counter("flixRangeRows", new ThreadSafeSimpleCounter());
        batchSizes = group.histogram("flixRangeBatchSize", new DescriptiveStatisticsHistogram(1000));
        latencies = group.histogram("flixRangeLatencyNanos", new DescriptiveStatisticsHistogram(1000));
    }

    /**
     * One probe: completes {@code future} with the rows of keys in {@code [lo, hi]}, at most the call's
     * {@code max_rows}, in key order ({@code table} and {@code maxRowsArgument} are the call's literals, read when
     * it was planned).
     */
    public void eval(CompletableFuture<Collection<RowData>> future, String table, Long lo, Long hi,
                     Integer maxRowsArgument) {
        final ProbeBatcher<Probe> gathering = batcher;
        if (gathering == null) {
            future.completeExceptionally(notOpen());
            return;
        }
        probes.inc();
        if (lo == null || hi == null || lo > hi) {
            future.complete(noRows());
            return;
        }
        if (!gathering.add(new Probe(lo, hi, future))) {
            future.completeExceptionally(notOpen());
        }
    }

    private Collection<RowData> noRows() {
        return orNull ? Collections.singletonList(new GenericRowData(spec.rowType().getFieldCount()))
                : Collections.emptyList();
    }

    private IllegalStateException notOpen() {
        return new IllegalStateException("a probe of " + sqlName() + " on the 'flix' table ("
                + spec.describeChangelog() + ") after its function was closed, or before it was opened");
    }

    /** Answers a batch on this thread; where the dimension fails, every probe of the batch fails with the cause. */
    private void send(SharedDimension target, List<Probe> batch, long firstNanos) {
        final List<CompletableFuture<Collection<RowData>>> futures = new ArrayList<>(batch.size());
        for (Probe probe : batch) {
            futures.add(probe.future);
        }
        target.answer(futures, (index, rows) -> answer(batch, index, rows), () -> {
            batches.inc();
            batchSizes.update(batch.size());
            latencies.update(System.nanoTime() - firstNanos);
        });
    }

    /**
     * Under the dimension's shared lock: each probe's rows, or why one of them cannot be read. Index calls of at
     * most {@link #MAX_PAIRS_PER_CALL} pairs.
     */
    private Object[] answer(List<Probe> batch, IndexLookups index, PayloadStore.Reader<RowData> rows) {
        final int n = batch.size();
        final long[] lo = new long[n];
        final long[] hi = new long[n];
        for (int i = 0; i < n; i++) {
            lo[i] = batch.get(i).lo;
            hi[i] = batch.get(i).hi;
        }
        final Object[] answers = new Object[n];
        final int perCall = Math.max(1, MAX_PAIRS_PER_CALL / maxRows);
        long found = 0;
        for (int from = 0; from < n; from += perCall) {
            final int count = Math.min(perCall, n - from);
            final RangeResult ranges = count == n ? index.range(lo, hi, n, maxRows)
                    : index.range(Arrays.copyOfRange(lo, from, from + count),
                            Arrays.copyOfRange(hi, from, from + count), count, maxRows);
            for (int i = 0; i < count; i++) {
                answers[from + i] = rowsOf(ranges, i, rows);
                found += ranges.count(i);
            }
        }
        rowsAnswered.inc(found);
        return answers;
    }

    /** Range {@code i}'s rows in key order, or why one of them cannot be read. */
    private Object rowsOf(RangeResult ranges, int i, PayloadStore.Reader<RowData> rows) {
        final int from = ranges.offsets()[i];
        final int to = ranges.offsets()[i + 1];
        if (from == to) {
            return noRows();
        }
        final List<RowData> found = new ArrayList<>(to - from);
        for (int j = from; j < to; j++) {
            final long key = ranges.keys()[j];
            try {
                found.add(rows.payload(ranges.values()[j], key));
            } catch (IOException e) {
                return new IllegalStateException("the stored row of key " + key + " does not deserialize",
                        e.getCause() != null ? e.getCause() : e);
            }
        }
        return found;
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            final ProbeBatcher<Probe> gathering = batcher;
            batcher = null;
            if (gathering != null) {
                for (Probe unsent : gathering.close()) {
                    unsent.future.completeExceptionally(new IllegalStateException(sqlName() + " on the 'flix' "
                            + "table (" + spec.describeChangelog() + ") closed before this probe was sent"));
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
                SharedDimensions.release(held);
            }
        }
    }

    // ---- for tests ----

    DimensionSpec spec() {
        return spec;
    }

    int maxRows() {
        return maxRows;
    }

    int batchSize() {
        return batchSize;
    }

    SharedDimension dimension() {
        return dimension;
    }
}
