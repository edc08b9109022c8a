/**
 * The {@code 'flix'} SQL/Table connector: a lookup table held in a task-manager-local FliX index and kept current
 * from a changelog, for processing-time lookup joins.
 * <pre>{@code
 * CREATE TABLE products (
 *   id BIGINT, name STRING, price DECIMAL(10, 2),
 *   PRIMARY KEY (id) NOT ENFORCED
 * ) WITH (
 *   'connector' = 'flix',
 *   'topic' = 'products',                            -- an upsert topic: key {"id": 42}, value the row, null deletes
 *   'properties.bootstrap.servers' = 'broker:9092',
 *   'key.format' = 'json', 'value.format' = 'json'
 * );
 *
 * SELECT o.order_id, p.name, p.price
 * FROM orders AS o
 * JOIN products FOR SYSTEM_TIME AS OF o.proc_time AS p ON o.product_id = p.id;
 * }</pre>
 *
 * <h2>Table</h2>
 * A primary key of exactly one {@code BIGINT} column (the index key) and any other physical columns. Each key's row
 * (every physical column) is kept serialized with Flink's {@code RowDataSerializer} in a
 * {@link io.flix.flink.RowStore}; the index maps the key to the row id. The table is a lookup source only: no
 * scans, no event-time temporal joins. A join must equate the primary key; where it also equates other columns of
 * the same type, Flink hands them to the connector as further lookup keys and a row is returned only where those
 * are equal too, by SQL equality as Flink evaluates it ({@link io.flix.flink.table.SqlEquality}: BYTES by content,
 * {@code -0.0 = 0.0}, NaN equal to nothing, a null equal to nothing). Columns of character or binary strings,
 * BOOLEAN, numbers, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ and intervals may be equated so; a join equating a column
 * of another type (ARRAY, MAP, ROW, ...) is refused when it is planned, naming the column. An equality between
 * types that differ (another DECIMAL scale, another TIMESTAMP precision) is no lookup key: Flink evaluates it on
 * the returned row itself.
 *
 * <h2>Changelog</h2>
 * <ul>
 *   <li>{@code 'changelog' = 'kafka'} (the default): an upsert topic, read by a Kafka consumer of the connector's
 *       own on a background thread, with every partition assigned (no consumer group, no committed offsets) from
 *       the earliest offset, for as long as the table is open. Record keys are decoded with {@code 'key.format'}
 *       into a row of the key column, values with {@code 'value.format'} (Flink's format factories, as upsert-kafka
 *       discovers them, with their options under {@code 'key.<format>.'} and {@code 'value.<format>.'}); with
 *       {@code 'value.fields-include' = 'ALL'} the value holds every column, with {@code 'EXCEPT_KEY'} every
 *       column but the key; the key column is always the record key's. A null value (a tombstone) deletes the
 *       key. Partitions added to the topic while the table is open are not picked up. {@code 'properties.*'}
 *       options go to the consumer as they are. The consumer reads with {@code isolation.level = read_committed}
 *       unless {@code 'properties.isolation.level'} says otherwise: rows of aborted transactions are never applied,
 *       and rows of a transaction still open are applied once it commits (with what follows it in its
 *       partition).</li>
 *   <li>{@code 'changelog' = 'file'}: a local file of rows, one per line in {@code 'value.format'} (JSON lines by
 *       default), applied in order when the table opens; a changelog format (for example {@code 'debezium-json'})
 *       can delete keys. Read once, not watched: for a dimension that changes while the job runs, use Kafka.</li>
 * </ul>
 * Records without a usable key, and values (or lines) a format decodes to nothing or to a null row (with
 * {@code 'value.json.ignore-parse-errors' = 'true'}, Flink's JSON format gives nothing for a value that is not JSON
 * and a null row for one that breaks off inside the row), are skipped, counted in
 * {@code flixChangelogRecordsSkipped}, and logged as a warning naming the partition and offset (or the line): the
 * first one, then at most one line a minute with the count since.
 * Changes are applied by the reader's thread in micro-batches ({@code 'changelog.batch-size'} at most; a poll's
 * records as soon as they arrive), in changelog order, one batch at a time, through
 * {@link io.flix.index.batch.MicroBatchEngine}: upserts and deletes with exactly the effect of applying them one at
 * a time. While the index applies a batch the reader waits, so a slow index holds the reader back rather than
 * letting records pile up in memory.
 *
 * <h2>Bootstrap</h2>
 * A lookup subtask's {@code open} waits until the changelog has been applied up to where it ended when the table
 * opened on this task manager (the end offsets of every partition at the consumer's start, as its isolation level
 * sees them: under read_committed the last stable offset, so an open transaction never holds the bootstrap; the
 * whole file). So every lookup sees at least the committed data that was in the topic when the job started, and
 * results on it are deterministic. Later changes are applied as they arrive (see Visibility below).
 * <p>The bootstrap must end within {@code 'lookup.bootstrap-timeout'} of the table's opening on the task manager
 * (one deadline for every subtask sharing the table); every broker call of the bootstrap is bounded by what is left
 * of it. Otherwise the open fails with an error that names the changelog (the topic and the bootstrap servers, or
 * the file), what the reader was waiting for and, where the brokers did not answer, why (each bootstrap server is
 * tried: connection refused, unknown host, ...).
 *
 * <h2>One index per task manager</h2>
 * The lookup subtasks of a task manager share one index and one changelog reader per table: a reference-counted
 * static registry keyed by the table's identity (its options, columns and key) opens it for the first subtask and
 * frees it when the last one closes. Static means per class loader: with the connector in the job's jar the
 * subtasks of one job share it; with the connector in Flink's {@code lib/}, equal tables of several jobs on one
 * task manager share too. The index and the rows are held in an {@link io.flix.flink.dimension.LocalDimension}, the
 * same home as the DataStream shared mode's dimension: the reader applies each batch of changelog records under its
 * exclusive lock, and each lookup batch is answered on the thread that sends it (its subtask's, or the linger
 * timer's) under its shared lock. So the lookups of several subtasks run in parallel on the CPU backend, and on the
 * GPU backend, which runs one index call at a time, the batches that meet are gathered into one larger index call;
 * no thread besides the reader and the linger timer. The index opens when the first subtask opens the table; where
 * it cannot (for example {@code 'index.backend' = 'gpu'} without a usable GPU), that open fails naming the table and
 * the cause. The index uses the task manager's first visible GPU ({@code 'index.backend'}: auto, cpu, gpu) or, on
 * the CPU, all its cores ({@code 'index.threads'}).
 *
 * <h2>Visibility</h2>
 * A lookup sees every changelog record applied before its batch was answered, and none applied after: records are
 * applied in changelog order (per Kafka partition, as Kafka orders them; the file's lines in order), one batch at a
 * time, and a lookup batch sees each batch of records wholly or not at all. A lookup batch sent while a batch of
 * records is being applied waits for it. (Earlier versions ran lookups and records through one owner thread and
 * one queue: a lookup saw exactly the records queued before it, and the lookups of every subtask were answered one
 * engine batch at a time; now the reader applies records itself and no lookup passes through another thread.)
 * Two batches of one subtask may be answered at the same time (one on the subtask's thread, one on the linger
 * timer's), so a later batch may be answered first; Flink's async lookup operator keeps the output order unless
 * told {@code 'ALLOW_UNORDERED'}.
 *
 * <h2>Lookups</h2>
 * {@link io.flix.flink.table.FlixAsyncLookupFunction} gathers a subtask's lookups and sends them as one batch when
 * it holds {@code 'lookup.batch-size'} lookups or its first one has waited {@code 'lookup.linger'}; each lookup's
 * future completes with 0 or 1 row, or exceptionally where the table failed. Whatever fails applying a batch of
 * records or answering a lookup batch (the index, the row store, a metrics callback, an
 * {@link java.lang.OutOfMemoryError}) or in the changelog reader is logged and fails the lookup batches not answered
 * yet (those waiting for the failed batch of records included) and every later one with that cause, which fails
 * the job; its restart gets a fresh table that reads the changelog afresh. Batches answered on other threads at
 * the moment of the failure complete with their (correct) rows. A stored row that does not deserialize fails its
 * own lookup only. A lookup after the function closed fails with an {@link java.lang.IllegalStateException}
 * saying so. Flink keeps at most
 * {@code 'table.exec.async-lookup.buffer-capacity'} lookups in flight per subtask (default 100): set it to at least
 * the batch size, and {@code 'table.exec.async-lookup.output-mode' = 'ALLOW_UNORDERED'} where order need not be
 * kept. Nothing is cached in front of the index: every lookup reads it.
 *
 * <h2>Range lookups</h2>
 * {@code FLIX_RANGE(table, lo, hi, max_rows)} answers, per probe, the rows of a {@code 'flix'} table with keys in
 * {@code [lo, hi]}, at most {@code max_rows}, in key order; {@code FLIX_RANGE_OR_NULL} answers one row of NULLs
 * where the range holds none, so that a probe is never lost. Both are asynchronous table functions used with
 * {@code LATERAL TABLE(...)}, held by the {@code 'flix'} catalog ({@link io.flix.flink.table.FlixCatalog},
 * {@code CREATE CATALOG flix WITH ('type' = 'flix')}), and read the table of that name declared in it, sharing its
 * dimension with the table's lookup joins; their probes are gathered into batches as the lookup join's are.
 * <pre>{@code
 * SELECT q.query_id, p.id, p.name
 * FROM queries AS q, LATERAL TABLE(FLIX_RANGE('products', q.lo, q.hi, 10)) AS p;
 * }</pre>
 * Semantics, limits, the Flink options they need and why they come with a catalog:
 * {@link io.flix.flink.table.FlixRangeFunction}.
 *
 * <h2>Checkpoints</h2>
 * The table holds no Flink state: after a failure or a restore, its contents are read again from the changelog.
 *
 * <h2>Metrics</h2>
 * On each lookup subtask's metric group: counters {@code flixLookups}, {@code flixLookupBatches}; histograms
 * {@code flixLookupBatchSize} and {@code flixLookupLatencyNanos} (from a batch's first lookup to its answer);
 * gauges of the shared table: {@code flixIndexSize}, {@code flixRowBytes}, {@code flixBackend},
 * {@code flixChangelogRecordsApplied}, {@code flixChangelogRecordsSkipped}, {@code flixBootstrapMillis}.
 *
 * <h2>Options</h2>
 * See {@link io.flix.flink.table.FlixConnectorOptions}. Validation errors name the option; the primary key must be
 * exactly one BIGINT column.
 */
package io.flix.flink.table;
