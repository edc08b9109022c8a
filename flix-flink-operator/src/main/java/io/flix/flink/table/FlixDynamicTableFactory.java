package io.flix.flink.table;

import io.flix.flink.IndexSettings;
import io.flix.flink.LookupKind;
import io.flix.flink.table.lookup.LookupOptions;
import io.flix.flink.table.spec.DimensionSpec;
import io.flix.flink.table.spec.SnapshotSettings;
import io.flix.index.Backend;
import io.flix.index.GpuMemoryBudget;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DeserializationFormatFactory;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static io.flix.flink.table.FlixConnectorOptions.CHANGELOG;
import static io.flix.flink.table.FlixConnectorOptions.CHANGELOG_BATCH_SIZE;
import static io.flix.flink.table.FlixConnectorOptions.CHANGELOG_DECODE_THREADS;
import static io.flix.flink.table.FlixConnectorOptions.CHANGELOG_POLL_TIMEOUT;
import static io.flix.flink.table.FlixConnectorOptions.FILE_PATH;
import static io.flix.flink.table.FlixConnectorOptions.INDEX_BACKEND;
import static io.flix.flink.table.FlixConnectorOptions.INDEX_GPU_MEMORY_BUDGET;
import static io.flix.flink.table.FlixConnectorOptions.INDEX_INITIAL_FILL;
import static io.flix.flink.table.FlixConnectorOptions.INDEX_DEVICES;
import static io.flix.flink.table.FlixConnectorOptions.INDEX_EXACT_KEY_TABLE;
import static io.flix.flink.table.FlixConnectorOptions.INDEX_NODE_SIZE;
import static io.flix.flink.table.FlixConnectorOptions.INDEX_THREADS;
import static io.flix.flink.table.FlixConnectorOptions.KEY_FORMAT;
import static io.flix.flink.table.FlixConnectorOptions.LOOKUP_BATCH_POLICY;
import static io.flix.flink.table.FlixConnectorOptions.LOOKUP_BATCH_SIZE;
import static io.flix.flink.table.FlixConnectorOptions.LOOKUP_BOOTSTRAP_TIMEOUT;
import static io.flix.flink.table.FlixConnectorOptions.LOOKUP_LINGER;
import static io.flix.flink.table.FlixConnectorOptions.LOOKUP_MATCH;
import static io.flix.flink.table.FlixConnectorOptions.PROPERTIES_PREFIX;
import static io.flix.flink.table.FlixConnectorOptions.PROPS_BOOTSTRAP_SERVERS;
import static io.flix.flink.table.FlixConnectorOptions.SNAPSHOT_INTERVAL;
import static io.flix.flink.table.FlixConnectorOptions.SNAPSHOT_PATH;
import static io.flix.flink.table.FlixConnectorOptions.TOPIC;
import static io.flix.flink.table.FlixConnectorOptions.VALUE_FIELDS_INCLUDE;
import static io.flix.flink.table.FlixConnectorOptions.VALUE_FORMAT;

/** Creates {@code 'connector' = 'flix'} tables; registered through {@code META-INF/services}. */
public final class FlixDynamicTableFactory implements DynamicTableSourceFactory {

    public static final String IDENTIFIER = "flix";

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(CHANGELOG, TOPIC, PROPS_BOOTSTRAP_SERVERS, KEY_FORMAT, VALUE_FORMAT, VALUE_FIELDS_INCLUDE,
                CHANGELOG_POLL_TIMEOUT, CHANGELOG_BATCH_SIZE, CHANGELOG_DECODE_THREADS, FILE_PATH, LOOKUP_BATCH_SIZE,
                LOOKUP_LINGER, LOOKUP_BATCH_POLICY,
                LOOKUP_BOOTSTRAP_TIMEOUT, LOOKUP_MATCH, INDEX_BACKEND, INDEX_NODE_SIZE, INDEX_INITIAL_FILL,
                INDEX_THREADS, INDEX_DEVICES, INDEX_GPU_MEMORY_BUDGET, INDEX_EXACT_KEY_TABLE, SNAPSHOT_PATH,
                SNAPSHOT_INTERVAL);
    }

    @Override
    public DynamicTableSource createDynamicTableSource(Context context) {
        final FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        final ReadableConfig options = helper.getOptions();

        final String changelogKind = options.get(CHANGELOG).trim().toLowerCase(Locale.ROOT);
        if (!changelogKind.equals(DimensionSpec.KAFKA) && !changelogKind.equals(DimensionSpec.FILE)) {
            throw new ValidationException("Option '" + CHANGELOG.key() + "' must be 'kafka' or 'file', was '"
                    + options.get(CHANGELOG) + "'.");
        }
        final boolean kafka = changelogKind.equals(DimensionSpec.KAFKA);
        final DecodingFormat<DeserializationSchema<RowData>> keyFormat =
                kafka ? helper.discoverDecodingFormat(DeserializationFormatFactory.class, KEY_FORMAT) : null;
        final DecodingFormat<DeserializationSchema<RowData>> valueFormat =
                helper.discoverDecodingFormat(DeserializationFormatFactory.class, VALUE_FORMAT);
        helper.validateExcept(PROPERTIES_PREFIX);

        final ResolvedSchema schema = context.getCatalogTable().getResolvedSchema();
        final DataType physicalType = context.getPhysicalRowDataType();
        final int keyIndex = primaryKeyIndex(schema, physicalType);
        final Map<String, String> tableOptions = context.getCatalogTable().getOptions();

        final ChangelogOptions changelog = changelogOptions(options, tableOptions, changelogKind);
        final ChangelogFormats formats = new ChangelogFormats(keyFormat, valueFormat,
                valueFields(options, kafka, DataType.getFieldNames(physicalType).size(), keyIndex));
        final LookupOptions lookup = lookupOptions(options);
        final IndexSettings indexSettings = indexSettings(options);
        final SnapshotSettings snapshots = SnapshotOptions.of(options, tableOptions, changelogKind, physicalType,
                keyIndex, changelog.consumerProperties());

        // equal tables (options, columns, key) share one dimension per task manager
        final String identity = new TreeMap<>(tableOptions) + "|" + physicalType.getLogicalType().asSerializableString()
                + "|key=" + keyIndex;
        return new FlixLookupTableSource(identity, physicalType, keyIndex, changelog, formats, indexSettings, lookup,
                snapshots);
    }

    private static ChangelogOptions changelogOptions(ReadableConfig options, Map<String, String> tableOptions,
                                                     String changelog) {
        String topic = null;
        String filePath = null;
        final Map<String, String> consumerProperties = new HashMap<>();
        if (changelog.equals(DimensionSpec.KAFKA)) {
            topic = required(options, TOPIC, changelog);
            required(options, PROPS_BOOTSTRAP_SERVERS, changelog);
            tableOptions.forEach((k, v) -> {
                if (k.startsWith(PROPERTIES_PREFIX)) {
                    consumerProperties.put(k.substring(PROPERTIES_PREFIX.length()), v);
                }
            });
        } else {
            filePath = required(options, FILE_PATH, changelog);
        }
        atLeast(options, CHANGELOG_BATCH_SIZE, 1);
        positive(options, CHANGELOG_POLL_TIMEOUT);
        atLeast(options, CHANGELOG_DECODE_THREADS, 0);
        return new ChangelogOptions(changelog, topic, consumerProperties, filePath,
                options.get(CHANGELOG_POLL_TIMEOUT), options.get(CHANGELOG_BATCH_SIZE),
                options.get(CHANGELOG_DECODE_THREADS));
    }

    /** The columns a changelog value holds: every one from a file; for kafka, as 'value.fields-include' says. */
    private static int[] valueFields(ReadableConfig options, boolean kafka, int columns, int keyIndex) {
        if (!kafka) {
            return allFields(columns, -1);
        }
        final String include = options.get(VALUE_FIELDS_INCLUDE).trim().toUpperCase(Locale.ROOT);
        if (include.equals("ALL")) {
            return allFields(columns, -1);
        }
        if (include.equals("EXCEPT_KEY")) {
            return allFields(columns, keyIndex);
        }
        throw new ValidationException("Option '" + VALUE_FIELDS_INCLUDE.key()
                + "' must be 'ALL' or 'EXCEPT_KEY', was '" + options.get(VALUE_FIELDS_INCLUDE) + "'.");
    }

    private static LookupOptions lookupOptions(ReadableConfig options) {
        atLeast(options, LOOKUP_BATCH_SIZE, 1);
        final Duration linger = options.get(LOOKUP_LINGER);
        if (linger.isNegative()) {
            throw new ValidationException("Option '" + LOOKUP_LINGER.key() + "' must not be negative, was "
                    + linger + ".");
        }
        positive(options, LOOKUP_BOOTSTRAP_TIMEOUT);
        return new LookupOptions(options.get(LOOKUP_BATCH_SIZE), linger, options.get(LOOKUP_BOOTSTRAP_TIMEOUT),
                lookupMatch(options), followLoad(options));
    }

    private static boolean followLoad(ReadableConfig options) {
        return switch (options.get(LOOKUP_BATCH_POLICY).trim().toLowerCase(Locale.ROOT)) {
            case "load" -> true;
            case "linger" -> false;
            default -> throw new ValidationException("Option '" + LOOKUP_BATCH_POLICY.key() + "' must be 'load' or "
                    + "'linger', was '" + options.get(LOOKUP_BATCH_POLICY) + "'.");
        };
    }

    private static LookupKind lookupMatch(ReadableConfig options) {
        final String match = options.get(LOOKUP_MATCH).trim().toUpperCase(Locale.ROOT);
        return switch (match) {
            case "EXACT" -> LookupKind.EXACT;
            case "FLOOR" -> LookupKind.FLOOR;
            case "CEILING" -> LookupKind.CEILING;
            default -> throw new ValidationException("Option '" + LOOKUP_MATCH.key() + "' must be 'exact', 'floor' "
                    + "or 'ceiling', was '" + options.get(LOOKUP_MATCH) + "'.");
        };
    }

    /** The position among the physical columns of the primary key: exactly one BIGINT column. */
    private static int primaryKeyIndex(ResolvedSchema schema, DataType physicalType) {
        final UniqueConstraint key = schema.getPrimaryKey().orElseThrow(() -> new ValidationException(
                "A 'flix' table needs a PRIMARY KEY of exactly one BIGINT column (the index key), "
                        + "declared as PRIMARY KEY (id) NOT ENFORCED; the table has none."));
        final List<String> columns = key.getColumns();
        if (columns.size() != 1) {
            throw new ValidationException("A 'flix' table needs a PRIMARY KEY of exactly one BIGINT column (the index "
                    + "key); the table's primary key has " + columns.size() + " columns: " + columns + ".");
        }
        final String name = columns.get(0);
        final Column column = schema.getColumn(name).orElseThrow();
        if (!column.isPhysical()) {
            throw new ValidationException("The primary key column '" + name + "' of a 'flix' table must be a "
                    + "physical column.");
        }
        if (column.getDataType().getLogicalType().getTypeRoot() != LogicalTypeRoot.BIGINT) {
            throw new ValidationException("The primary key column '" + name + "' of a 'flix' table must be BIGINT "
                    + "(the index key), was " + column.getDataType() + ".");
        }
        return DataType.getFieldNames(physicalType).indexOf(name);
    }

    private static String required(ReadableConfig options, ConfigOption<String> option, String changelog) {
        final String value = options.getOptional(option).orElse(null);
        if (value == null || value.isBlank()) {
            throw new ValidationException("Option '" + option.key() + "' is required when '" + CHANGELOG.key()
                    + "' = '" + changelog + "'.");
        }
        return value;
    }

    private static void atLeast(ReadableConfig options, ConfigOption<Integer> option, int min) {
        final int value = options.get(option);
        if (value < min) {
            throw new ValidationException("Option '" + option.key() + "' must be at least " + min + ", was " + value
                    + ".");
        }
    }

    private static void positive(ReadableConfig options, ConfigOption<Duration> option) {
        final Duration value = options.get(option);
        if (value.isNegative() || value.isZero()) {
            throw new ValidationException("Option '" + option.key() + "' must be positive, was " + value + ".");
        }
    }

    private static IndexSettings indexSettings(ReadableConfig options) {
        final String backendName = options.get(INDEX_BACKEND).trim().toUpperCase(Locale.ROOT);
        final Backend backend;
        try {
            backend = Backend.valueOf(backendName);
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Option '" + INDEX_BACKEND.key() + "' must be 'auto', 'cpu' or 'gpu', was '"
                    + options.get(INDEX_BACKEND) + "'.");
        }
        final GpuMemoryBudget budget = gpuMemoryBudget(options);
        try {
            return new IndexSettings(backend, options.get(INDEX_NODE_SIZE), options.get(INDEX_INITIAL_FILL),
                    options.get(INDEX_THREADS), options.get(INDEX_DEVICES), budget,
                    options.get(INDEX_EXACT_KEY_TABLE));
        } catch (IllegalArgumentException e) {
            // the index library checks its settings and names the setting first; here the option is named
            final ConfigOption<?> option = switch (e.getMessage().split(" ", 2)[0]) {
                case "nodeSize" -> INDEX_NODE_SIZE;
                case "initialFill" -> INDEX_INITIAL_FILL;
                case "threads" -> INDEX_THREADS;
                case "devices" -> INDEX_DEVICES;
                default -> null;
            };
            throw new ValidationException((option == null ? "" : "Option '" + option.key() + "': ") + e.getMessage()
                    + ".", e);
        }
    }

    /** 'index.gpu-memory-budget', parsed (and its forms worded) by the index library's GpuMemoryBudget. */
    private static GpuMemoryBudget gpuMemoryBudget(ReadableConfig options) {
        try {
            return GpuMemoryBudget.parse(options.get(INDEX_GPU_MEMORY_BUDGET));
        } catch (IllegalArgumentException e) {
            throw new ValidationException("Option '" + INDEX_GPU_MEMORY_BUDGET.key() + "': " + e.getMessage() + ".");
        }
    }

    /** 0..n-1 without {@code except} (or all where it is -1). */
    private static int[] allFields(int n, int except) {
        final int[] fields = new int[except < 0 ? n : n - 1];
        int at = 0;
        for (int i = 0; i < n; i++) {
            if (i != except) {
                fields[at++] = i;
            }
        }
        return fields;
    }
}
