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
 * {@link io.flix.flink.payload.RowStore}; the index maps the key to the row id. The table is a lookup source only: no
 * scans, no event-time temporal joins. A join must equate the primary key; where it also equates other columns of
 * the same type, Flink hands them to the connector as further lookup keys and a row is returned only where those
 * are equal too, by SQL equality as Flink evaluates it ({@link io.flix.flink.table.lookup.SqlEquality}: BYTES by content,
 * {@code -0.0 = 0.0}, NaN equal to nothing, a null equal to nothing). Columns of character or binary strings,
 * BOOLEAN, numbers, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ and intervals may be equated so; a join equating a column
 * of another type (ARRAY, MAP, ROW, ...) is refused when it is planned, naming the column. An equality between
 * types that differ (another DECIMAL scale, another TIMESTAMP precision) is no lookup key: Flink evaluates it on
 * the returned row itself.
 *
 * <h2>Floor and ceiling matches</h2>
 * With {@code 'lookup.match' = 'floor'} a lookup of key x answers with the row of the largest key {@code <=} x,
 * with {@code 'ceiling'} the row of the smallest key {@code >=} x, or nothing where there is none; over the whole
 * table (every lookup subtask reads the task manager's whole dimension, see below). The row is the stored one: its
 * key column holds its own key, not x. So IP ranges (disjoint {@code [start_ip, end_ip]}) join in plain SQL:
 * <pre>{@code
 * CREATE TABLE ip_ranges (start_ip BIGINT, end_ip BIGINT, country STRING, PRIMARY KEY (start_ip) NOT ENFORCED)
 *   WITH ('connector' = 'flix', ..., 'lookup.match' = 'floor');
 *
 * SELECT c.click_id, c.ip, r.country
 * FROM clicks AS c
 * JOIN ip_ranges FOR SYSTEM_TIME AS OF c.proc_time AS r ON c.ip = r.start_ip AND c.ip <= r.end_ip;
 * }</pre>
 * (a {@code LEFT JOIN} keeps the clicks of no range, with nulls). Why this holds: Flink's planner
 * ({@code CommonPhysicalLookupJoin}) makes the join's equalities on the table's columns its lookup keys, hands their
 * values, taken from the probe row, to the lookup function ({@code LookupJoinCodeGenerator}), and leaves them out of
 * the join condition it evaluates on the rows the function returns; every other condition ({@code c.ip <= r.end_ip})
 * it evaluates on each returned row. So the equality stands for the match and Flink checks the rest. EXPLAIN shows
 * it: {@code LookupJoin(..., lookup=[start_ip=ip], joinCondition=[<=(ip, end_ip)], select=[..., start_ip, ...])}.
 * <p>Elsewhere the planner takes the equality for an exact one, and a join that would depend on it is refused when
 * it is planned, with an error naming the column or the condition:
 * <ul>
 *   <li>A composite lookup key: a join that equates another column of the table besides the key (or sets it to a
 *       constant). Its equality would be held against the row of another key.</li>
 *   <li>A condition on the key column. Flink evaluates it on the returned row, whose key is not the probe; and the
 *       planner writes such conditions itself from conditions on the probe column ({@code FlinkFilterJoinRule}
 *       copies a condition on one side of an equi-join key onto the other: {@code WHERE c.ip > 120} adds
 *       {@code r.start_ip > 120}, which would drop the floor row 100 of the probe 150), and a constant probe
 *       ({@code WHERE c.ip = 150}, or {@code ON r.start_ip = 150}) becomes a constant lookup key with
 *       {@code r.start_ip = 150} required of the row and 150 put in place of {@code r.start_ip} in the output.
 *       Such conditions reach the table through filter push-down, where the connector accepts none (Flink evaluates
 *       them all) and, with a floor or ceiling match, refuses one that names the key column. So no condition of the
 *       query may name the key column nor the probe column equated with it; a condition of a {@code LEFT JOIN}'s
 *       {@code ON} on the probe alone ({@code AND c.ip > 120}) is not copied and is fine.</li>
 * </ul>
 * Not detected, so mind it: equate the key column with one probe expression only. With
 * {@code ON c.a = r.start_ip AND c.b = r.start_ip} the planner makes one of them the lookup key and checks the other
 * on the returned row. The connector has no lookup cache (Flink's {@code 'lookup.cache'} options are refused as
 * unknown options): a cache keyed by the probe would hold, but Flink's FULL cache indexes the rows by their own
 * keys and answers exact matches only. {@code 'exact'}, the default, is the plain lookup join.
 *
 * <h2>Changelog</h2>
 * <ul>
 *   <li>{@code 'changelog' = 'kafka'} (the default): an upsert topic, read by a Kafka consumer of the connector's
 *       own on a background thread, with every partition assigned (no consumer group, no committed offsets) from
 *       the earliest offset (or, with {@code 'snapshot.path'}, from a snapshot's offsets: see Snapshots below),
 *       for as long as the table is open. Record keys are decoded with {@code 'key.format'}
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
 *       can delete keys; an update that changes a row's key (update-before of the old key, update-after of the
 *       new) deletes the old key. A line the format cannot parse, without its ignore-parse-errors option, fails the
 *       open naming the file and the line. Read once, not watched: for a dimension that changes while the job runs,
 *       use Kafka.</li>
 * </ul>
 * Records without a usable key, and values (or lines) a format decodes to nothing or to a null row (with
 * {@code 'value.json.ignore-parse-errors' = 'true'}, Flink's JSON format gives nothing for a value that is not JSON
 * and a null row for one that breaks off inside the row), are skipped, counted in
 * {@code flixChangelogRecordsSkipped}, and logged as a warning naming the partition and offset (or the line): the
 * first one, then at most one line a minute with the count since.
 * Changes are applied in micro-batches ({@code 'changelog.batch-size'} at most; once bootstrapped a poll's records as
 * soon as they arrive, while bootstrapping the polls' records gathered up to that size; while bootstrapping, a Kafka
 * poll of at least 1,024 records is decoded in slices on up to {@code 'changelog.decode-threads'} threads (by default
 * one a core), each with copies of the formats' decoders, while the reader polls the next records, and the slices'
 * updates join the batch in record order, so a batch may pass the size by the rest of one poll), in changelog order,
 * one batch at a time, through {@link io.flix.index.batch.MicroBatchEngine}: upserts and deletes with exactly the
 * effect of applying them one at a time. While bootstrapping, a batch is applied on a thread of the reader's own
 * while the reader gathers the next; after, on the reader's thread. Either way at most one batch is applied and one
 * gathered: a slow index holds the reader back rather than letting records pile up in memory.
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
 * tried: connection refused, unknown host, ...). Where no broker answers the first call (the topic's partitions)
 * within the consumer's {@code default.api.timeout.ms} (Kafka's 60 s unless
 * {@code 'properties.default.api.timeout.ms'} says otherwise), the open fails then, with the same naming, rather
 * than wait out the bootstrap's budget, which is for reading the topic.
 *
 * <h2>One index per task manager</h2>
 * The lookup subtasks of a task manager share one index and one changelog reader per table: a reference-counted
 * static registry keyed by the table's identity (its options, columns and key) opens it for the first subtask and
 * frees it when the last one closes. Static means per class loader: with the connector in the job's jar the
 * subtasks of one job share it; with the connector in Flink's {@code lib/}, equal tables of several jobs on one
 * task manager share too. The index and the rows are held in an {@link io.flix.flink.dimension.LocalDimension}, the
 * same home as the DataStream shared mode's dimension: the reader applies each batch of changelog records under its
 * exclusive lock, and each lookup batch is answered on the thread that sends it (the subtask's dispatcher thread
 * under {@code 'lookup.batch-policy' = 'load'}, the subtask's own, or the linger timer's) under its shared lock. So the lookups of several subtasks run in parallel on the CPU backend, and on the
 * GPU backend, which runs one index call at a time, the batches that meet are gathered into one larger index call;
 * no thread besides the reader, the linger timer and one dispatcher per lookup subtask (under the load policy,
 * stopped and joined when the subtask closes). The index opens when the first subtask opens the table; where
 * it cannot (for example {@code 'index.backend' = 'gpu'} without a usable GPU), that open fails naming the table and
 * the cause. The index uses the task manager's first visible GPU ({@code 'index.backend'}: auto, cpu, gpu) or, on
 * the CPU, all its cores ({@code 'index.threads'}). {@code 'index.gpu-memory-budget'} ('80%', '40gb') bounds the
 * device memory that the task manager's GPU indexes hold together: a changelog batch that would pass it fails the
 * table (the index as it was before the batch), naming the budget, the bytes in use and asked for.
 *
 * <h2>Visibility</h2>
 * A lookup sees every changelog record applied before its batch was answered, and none applied after: records are
 * applied in changelog order (per Kafka partition, as Kafka orders them; the file's lines in order), one batch at a
 * time, and a lookup batch sees each batch of records wholly or not at all. A lookup batch sent while a batch of
 * records is being applied waits for it. (Earlier versions ran lookups and records through one owner thread and
 * one queue: a lookup saw exactly the records queued before it, and the lookups of every subtask were answered one
 * engine batch at a time; now the reader applies records itself and no lookup passes through another thread.)
 * Two batches of one subtask may be answered at the same time (one on the dispatcher's or the subtask's thread,
 * one on the linger timer's), so a later batch may be answered first; Flink's async lookup operator keeps the output order unless
 * told {@code 'ALLOW_UNORDERED'}.
 *
 * <h2>Lookups</h2>
 * {@link io.flix.flink.table.lookup.FlixAsyncLookupFunction} gathers a subtask's lookups and sends them as one batch; under
 * {@code 'lookup.batch-policy' = 'load'} (the default) batches follow the load: a lookup that arrives while no batch
 * of the subtask is in flight is sent at once on the subtask's dispatcher thread, and the lookups that arrive while
 * one is in flight go together when it completes ({@link io.flix.flink.table.lookup.ProbeBatcher}); under both policies a
 * batch goes when it holds {@code 'lookup.batch-size'} lookups or its first one has waited {@code 'lookup.linger'}
 * (under {@code 'linger'} these are the only triggers); each lookup's
 * future completes with 0 or 1 row, or exceptionally where the table failed. Whatever fails applying a batch of
 * records or answering a lookup batch (the index, the row store, a metrics callback, an
 * {@link java.lang.OutOfMemoryError}) or in the changelog reader is logged and fails the lookup batches not answered
 * yet (those waiting for the failed batch of records included) and every later one with that cause, which fails
 * the job; its restart gets a fresh table that reads the changelog afresh (from a snapshot, where they are on).
 * Batches answered on other threads at the moment of the failure complete with their (correct) rows. A stored row that does not deserialize fails its
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
 * The table holds no Flink state: after a failure or a restore, its contents are read again from the changelog
 * (from the newest snapshot on, where snapshots are on).
 *
 * <h2>Snapshots: restarting without reading the whole topic</h2>
 * With {@code 'snapshot.path'} (a directory on any Flink file system: {@code s3://}, {@code hdfs://},
 * {@code file://}; one directory per table), the table writes its rows there every {@code 'snapshot.interval'}
 * (10 minutes by default) together with, per partition, the offset up to which they include the topic; and a start
 * that read the whole topic writes one as soon as its bootstrap ends. A start loads the newest complete snapshot and
 * reads the topic from its offsets (measured: {@code docs/results/snapshot-bootstrap-cpu-2026-11-23.md}).
 * Snapshots need the Kafka changelog ('changelog' = 'file' with a path is refused: a file is read whole at every
 * open anyway). Metrics say what happened: {@code flixSnapshotRestoredKeys} (-1 where the whole topic was read) and
 * {@code flixChangelogRecordsRead}; the log says why a snapshot was not used.
 * <ul>
 *   <li><b>Complete or absent.</b> A snapshot is a data file and a manifest (JSON: topic, topic id, the table's
 *       definition, offsets, the data file's length and CRC-32C). The manifest is written under a temporary name
 *       once the data file is closed and published by a rename; a start considers only published manifests and
 *       checks the data file's length and checksum before it uses a byte of it. So a write that dies (the task
 *       manager killed mid-write) is never loaded: the start takes the complete snapshot before it. After each
 *       snapshot the writer keeps the newest two complete ones and deletes older snapshots and what failed writes
 *       left. See {@link io.flix.flink.table.snapshot.SnapshotDirectory}.</li>
 *   <li><b>One writer.</b> The task manager that runs the first subtask (index 0) of a lookup join on the table
 *       writes; the others only read snapshots. Should two write at once (two joins on the table, two jobs on one
 *       path), each snapshot still has files of its own and is complete or absent. See
 *       {@link io.flix.flink.table.snapshot.SnapshotWriter}.</li>
 *   <li><b>Lookups go on.</b> A snapshot is written page by page (65,536 keys), each page copied under the table's
 *       shared lock and written to the file system outside it: lookups run beside the write, and the changelog
 *       reader waits for one page's copy at most. Pages copied after records were applied hold those records; the
 *       offsets are taken before the first page, and a start applies every record from them on, so each key ends as
 *       its last record says.</li>
 *   <li><b>Never a second truth.</b> A start from a snapshot gives what a read of the whole topic would. Where the
 *       newest complete snapshot cannot (the table's definition changed: columns, key, formats or their options,
 *       'value.fields-include', the isolation level; the topic was deleted and created again; retention deleted
 *       records after a snapshot offset; a partition is gone or shorter; the topic is compacted and the snapshot
 *       older than its delete.retention.ms less a tenth, so the cleaner may have removed tombstones after its
 *       offsets), the start reads the whole topic and logs
 *       a warning with the reason; where its data does not match its manifest, the complete snapshot before it is
 *       tried. A directory whose newest snapshot is of another topic is refused: the open fails naming both topics
 *       (two tables on one path would delete each other's snapshots). See
 *       {@link io.flix.flink.table.snapshot.SnapshotRestore}.</li>
 * </ul>
 * Loading a snapshot counts toward {@code 'lookup.bootstrap-timeout'}. A failed write is logged and counted
 * ({@code flixSnapshotFailures}); lookups go on and the next interval tries again.
 *
 * <h2>Metrics</h2>
 * On each lookup subtask's metric group: counters {@code flixLookups}, {@code flixLookupBatches}; histograms
 * {@code flixLookupBatchSize} and {@code flixLookupLatencyNanos} (from a batch's first lookup to its answer);
 * gauges of the shared table: {@code flixIndexSize}, {@code flixRowBytes}, {@code flixBackend}, {@code flixDevices}
 * (the CUDA devices of its replicas, say "0,1"; "-1" on the CPU),
 * {@code flixChangelogRecordsApplied}, {@code flixChangelogRecordsSkipped}, {@code flixChangelogRecordsRead},
 * {@code flixBootstrapMillis}; of its snapshots: {@code flixSnapshotRestoredKeys}, {@code flixSnapshotsWritten},
 * {@code flixSnapshotFailures}, {@code flixSnapshotWriteMillis} and {@code flixSnapshotPageLockNanos} (the longest
 * the last write held the shared lock at once).
 *
 * <h2>Options</h2>
 * See {@link io.flix.flink.table.FlixConnectorOptions}. Validation errors name the option; the primary key must be
 * exactly one BIGINT column.
 *
 * <h2>Packages</h2>
 * This package is the connector's surface: the factories Flink discovers, the options, the table source, the
 * catalog and its {@code FLIX_RANGE} functions. Under it, each package may use only those listed after it:
 * {@code table.lookup} (the lookup function, probe batching, SQL equality), {@code table.dimension} (a table's
 * dimension on a task manager and its registry), {@code table.changelog} (the readers and the decoder),
 * {@code table.snapshot} (snapshot files, restore, the writer), {@code table.spec} (the table's definition as
 * values). The changelog and the snapshots reach the dimension through interfaces of their own.
 */
package io.flix.flink.table;
