package io.flix.flink.table;

import io.flix.index.FlixConfig;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;

import java.time.Duration;

/** Every option of the {@code 'flix'} table connector (see the package documentation for how they work together). */
public final class FlixConnectorOptions {

    private FlixConnectorOptions() {
    }

    /** Where the dimension's contents come from. */
    public static final ConfigOption<String> CHANGELOG = ConfigOptions.key("changelog")
            .stringType()
            .defaultValue("kafka")
            .withDescription("Where the table's contents come from: 'kafka' (an upsert topic: the record key is the "
                    + "primary key, a null value deletes it) or 'file' (a file of rows read once when the first "
                    + "lookup subtask opens).");

    // ---- Kafka changelog ----

    public static final ConfigOption<String> TOPIC = ConfigOptions.key("topic")
            .stringType()
            .noDefaultValue()
            .withDescription("changelog = 'kafka': the upsert topic. All its partitions are read from the earliest "
                    + "offset, or from a snapshot's offsets (see 'snapshot.path').");

    public static final ConfigOption<String> PROPS_BOOTSTRAP_SERVERS = ConfigOptions.key("properties.bootstrap.servers")
            .stringType()
            .noDefaultValue()
            .withDescription("changelog = 'kafka': the brokers. Any other 'properties.*' option is passed to the Kafka "
                    + "consumer as it is (security settings, for example). The consumer reads with "
                    + "'isolation.level' = 'read_committed' (rows of aborted transactions are never applied) unless "
                    + "'properties.isolation.level' = 'read_uncommitted' is set.");

    /** Prefix of options passed to the Kafka consumer. */
    public static final String PROPERTIES_PREFIX = "properties.";

    public static final ConfigOption<String> KEY_FORMAT = ConfigOptions.key("key.format")
            .stringType()
            .defaultValue("json")
            .withDescription("changelog = 'kafka': the format of record keys, decoded into a row of the primary key "
                    + "column (with 'json': {\"id\": 42}). Its own options take the prefix 'key.<format>.'.");

    public static final ConfigOption<String> VALUE_FORMAT = ConfigOptions.key("value.format")
            .stringType()
            .defaultValue("json")
            .withDescription("The format of record values (changelog = 'kafka') or of the file's lines (changelog = "
                    + "'file'). Its own options take the prefix 'value.<format>.'.");

    public static final ConfigOption<String> VALUE_FIELDS_INCLUDE = ConfigOptions.key("value.fields-include")
            .stringType()
            .defaultValue("ALL")
            .withDescription("changelog = 'kafka': 'ALL' when the value holds every column, the key column too (as "
                    + "upsert-kafka's default), 'EXCEPT_KEY' when it holds the other columns only. The key column is "
                    + "always taken from the record key.");

    public static final ConfigOption<Duration> CHANGELOG_POLL_TIMEOUT = ConfigOptions.key("changelog.poll-timeout")
            .durationType()
            .defaultValue(Duration.ofMillis(100))
            .withDescription("changelog = 'kafka': how long one poll of the consumer waits for records.");

    public static final ConfigOption<Integer> CHANGELOG_BATCH_SIZE = ConfigOptions.key("changelog.batch-size")
            .intType()
            .defaultValue(1 << 20)
            .withDescription("The most changelog records applied to the index in one micro-batch. Once the table has "
                    + "bootstrapped a batch is applied as soon as a poll returns, however small; while it bootstraps "
                    + "the polls gather up to this many (a poll decoded in slices joins whole, so such a batch may "
                    + "pass this by the rest of one poll), or until their rows hold 64 MiB. Large batches cost the "
                    + "index less per record, most of all an index cut into many key-range shards.");

    public static final ConfigOption<Integer> CHANGELOG_DECODE_THREADS = ConfigOptions.key("changelog.decode-threads")
            .intType()
            .defaultValue(0)
            .withDescription("changelog = 'kafka': the most threads that decode the records of a poll while the table "
                    + "bootstraps (it answers no lookup until then); a poll of at least 1,024 records is cut into "
                    + "slices of at least 512, decoded by copies of the formats' decoders, and applied in record "
                    + "order. Once the table has bootstrapped, the reader's thread decodes alone. Default 0: one "
                    + "thread a core of the task manager; 1: the reader's thread alone.");

    // ---- file changelog ----

    public static final ConfigOption<String> FILE_PATH = ConfigOptions.key("file.path")
            .stringType()
            .noDefaultValue()
            .withDescription("changelog = 'file': a local file, one row per line in 'value.format' (JSON lines by "
                    + "default), applied in file order. Rows a changelog format marks as deletes (for example "
                    + "'debezium-json') delete their key; others insert or replace it. Read once, not watched.");

    // ---- snapshots ----

    public static final ConfigOption<String> SNAPSHOT_PATH = ConfigOptions.key("snapshot.path")
            .stringType()
            .noDefaultValue()
            .withDescription("changelog = 'kafka': a directory on a Flink file system (for example "
                    + "'s3://bucket/flix/products', 'hdfs:///flix/products', 'file:///data/flix/products'), one per "
                    + "table. The table periodically writes its rows there with the topic offsets they include; a "
                    + "start loads the newest complete snapshot and reads the topic from those offsets instead of "
                    + "from the beginning. Unset: no snapshots, every start reads the whole topic.");

    public static final ConfigOption<Duration> SNAPSHOT_INTERVAL = ConfigOptions.key("snapshot.interval")
            .durationType()
            .defaultValue(Duration.ofMinutes(10))
            .withDescription("With 'snapshot.path': how often a snapshot is written (by one task manager, where the "
                    + "table changed since the last one). A start that read the whole topic writes one as soon as "
                    + "its bootstrap ends.");

    // ---- lookups ----

    public static final ConfigOption<Integer> LOOKUP_BATCH_SIZE = ConfigOptions.key("lookup.batch-size")
            .intType()
            .defaultValue(1024)
            .withDescription("A lookup subtask sends its gathered lookups to the index when it holds this many. "
                    + "Flink keeps at most 'table.exec.async-lookup.buffer-capacity' lookups in flight per subtask "
                    + "(default 100): raise it to at least this size, or batches wait for 'lookup.linger'.");

    public static final ConfigOption<Duration> LOOKUP_LINGER = ConfigOptions.key("lookup.linger")
            .durationType()
            .defaultValue(Duration.ofMillis(2))
            .withDescription("The longest a gathered lookup waits for its batch to fill before it is sent anyway.");

    public static final ConfigOption<String> LOOKUP_BATCH_POLICY = ConfigOptions.key("lookup.batch-policy")
            .stringType()
            .defaultValue("load")
            .withDescription("When a lookup subtask sends its gathered lookups: 'load' (batches follow the load: a "
                    + "lookup that arrives while none of the subtask's batches is in flight is sent at once, the "
                    + "lookups that arrive while one is in flight go together when it completes; "
                    + "'lookup.batch-size' and 'lookup.linger' stay upper bounds) or 'linger' (on "
                    + "'lookup.batch-size' lookups, or when the first has waited 'lookup.linger').");

    public static final ConfigOption<Duration> LOOKUP_BOOTSTRAP_TIMEOUT = ConfigOptions.key("lookup.bootstrap-timeout")
            .durationType()
            .defaultValue(Duration.ofMinutes(10))
            .withDescription("A lookup subtask opens only after the changelog has been applied up to where it ended "
                    + "when the table was first opened on this task manager; that must happen within this long of "
                    + "that first open, which bounds every broker call of the bootstrap too. Otherwise the open "
                    + "fails, naming the changelog (topic and bootstrap servers, or file) and the cause.");

    public static final ConfigOption<String> LOOKUP_MATCH = ConfigOptions.key("lookup.match")
            .stringType()
            .defaultValue("exact")
            .withDescription("Which row a lookup of key x answers with: 'exact' (the row of key x), 'floor' (the "
                    + "row of the largest key <= x) or 'ceiling' (the row of the smallest key >= x), over the whole "
                    + "table. With 'floor' or 'ceiling' the join's equality on the primary key stands for that match: "
                    + "IP ranges join as ON c.ip = r.start_ip AND c.ip <= r.end_ip. The join must equate the primary "
                    + "key only, and no other condition may name the key column or the probe column equated with "
                    + "it; a join that does is refused when it is planned (see the package documentation).");

    // ---- index ----

    public static final ConfigOption<String> INDEX_BACKEND = ConfigOptions.key("index.backend")
            .stringType()
            .defaultValue("auto")
            .withDescription("'gpu', 'cpu', or 'auto' (the GPU where one is usable, else the CPU index of identical "
                    + "semantics).");

    public static final ConfigOption<Integer> INDEX_NODE_SIZE = ConfigOptions.key("index.node-size")
            .intType()
            .defaultValue(FlixConfig.DEFAULT_NODE_SIZE)
            .withDescription("Keys per index node.");

    public static final ConfigOption<Double> INDEX_INITIAL_FILL = ConfigOptions.key("index.initial-fill")
            .doubleType()
            .defaultValue(FlixConfig.DEFAULT_INITIAL_FILL)
            .withDescription("Fill of a node after a bulk build or restructure, in (0, 1].");

    public static final ConfigOption<Integer> INDEX_THREADS = ConfigOptions.key("index.threads")
            .intType()
            .defaultValue(0)
            .withDescription("CPU index threads; 0 for the machine's cores (the index is shared by the task "
                    + "manager's lookup subtasks).");

    public static final ConfigOption<Integer> INDEX_DEVICES = ConfigOptions.key("index.devices")
            .intType()
            .defaultValue(0)
            .withDescription("GPUs of a task manager that hold the table: a replica on each, lookups spread over "
                    + "them; 0 for every CUDA device the task manager sees. More than it sees fails the open.");

    public static final ConfigOption<Boolean> INDEX_EXACT_KEY_TABLE = ConfigOptions.key("index.exact-key-table")
            .booleanType()
            .defaultValue(true)
            .withDescription("CPU index: also keep every key with its value in a hash table, so that an exact "
                    + "lookup reads about one cache line (16 to 32 more heap bytes a key). Floor, ceiling and range "
                    + "lookups do not use it. Ignored by the GPU backend.");

    public static final ConfigOption<String> INDEX_GPU_MEMORY_BUDGET = ConfigOptions.key("index.gpu-memory-budget")
            .stringType()
            .defaultValue("none")
            .withDescription("The most device memory the GPU indexes of a task manager may hold on its GPU together "
                    + "(this table's, other 'flix' tables', the DataStream operator's): a percentage of the device's "
                    + "memory ('80%'), a byte count ('40gb', '512mb'; multiples of 1024) or 'none' (the device's "
                    + "size). A changelog batch that would grow the index past it fails the table, naming the budget, "
                    + "the bytes in use and asked for, before the device runs out. Ignored by the CPU backend.");
}
