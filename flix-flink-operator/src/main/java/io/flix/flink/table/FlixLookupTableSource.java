package io.flix.flink.table;

import io.flix.flink.IndexSettings;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.connector.format.DecodingFormat;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.lookup.AsyncLookupFunctionProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** The {@code 'flix'} table: lookups only, by the BIGINT primary key (see the package documentation). */
public final class FlixLookupTableSource implements LookupTableSource {

    private final String identity;
    private final DataType physicalType;
    private final int keyIndex;
    private final String changelog;
    private final String topic;
    private final Map<String, String> consumerProperties;
    /** Kafka only; decodes into a row of the key column. */
    private final DecodingFormat<DeserializationSchema<RowData>> keyFormat;
    private final DecodingFormat<DeserializationSchema<RowData>> valueFormat;
    private final int[] valueFields;
    private final String filePath;
    private final long pollTimeoutMillis;
    private final int changelogBatchSize;
    private final IndexSettings indexSettings;
    private final int lookupBatchSize;
    private final long lingerNanos;
    private final long bootstrapTimeoutMillis;
    /** Null where 'snapshot.path' is not set. */
    private final SnapshotSettings snapshots;

    FlixLookupTableSource(String identity, DataType physicalType, int keyIndex, String changelog, String topic,
                          Map<String, String> consumerProperties,
                          DecodingFormat<DeserializationSchema<RowData>> keyFormat,
                          DecodingFormat<DeserializationSchema<RowData>> valueFormat, int[] valueFields,
                          String filePath, long pollTimeoutMillis, int changelogBatchSize,
                          IndexSettings indexSettings, int lookupBatchSize, long lingerNanos,
                          long bootstrapTimeoutMillis, SnapshotSettings snapshots) {
        this.identity = identity;
        this.physicalType = physicalType;
        this.keyIndex = keyIndex;
        this.changelog = changelog;
        this.topic = topic;
        this.consumerProperties = consumerProperties;
        this.keyFormat = keyFormat;
        this.valueFormat = valueFormat;
        this.valueFields = valueFields;
        this.filePath = filePath;
        this.pollTimeoutMillis = pollTimeoutMillis;
        this.changelogBatchSize = changelogBatchSize;
        this.indexSettings = indexSettings;
        this.lookupBatchSize = lookupBatchSize;
        this.lingerNanos = lingerNanos;
        this.bootstrapTimeoutMillis = bootstrapTimeoutMillis;
        this.snapshots = snapshots;
    }

    @Override
    public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
        final int[][] keys = context.getKeys();
        // the key row holds the lookup keys in the order of getKeys(); one of them must be the primary key
        final int[] lookupFields = new int[keys.length];
        int keyPosition = -1;
        for (int k = 0; k < keys.length; k++) {
            if (keys[k].length != 1) {
                throw new TableException("the 'flix' connector looks up top-level columns only, not "
                        + Arrays.toString(keys[k]));
            }
            lookupFields[k] = keys[k][0];
            if (keys[k][0] == keyIndex) {
                keyPosition = k;
            }
        }
        if (keyPosition < 0) {
            throw new TableException("a lookup join on a 'flix' table must equate its primary key column '"
                    + DataType.getFieldNames(physicalType).get(keyIndex) + "'; the join equates the columns "
                    + Arrays.deepToString(keys));
        }
        final RowType rowType = (RowType) physicalType.getLogicalType();
        for (int field : lookupFields) {
            if (field == keyIndex) {
                continue;
            }
            try {
                SqlEquality.of(rowType.getTypeAt(field));
            } catch (IllegalArgumentException e) {
                throw new TableException("a lookup join on a 'flix' table equates its column '"
                        + rowType.getFieldNames().get(field) + "' besides the primary key, and the connector "
                        + "cannot compare it as a lookup key: " + e.getMessage(), e);
            }
        }
        final DeserializationSchema<RowData> keyDecoder;
        final DeserializationSchema<RowData> valueDecoder;
        if (changelog.equals(DimensionSpec.KAFKA)) {
            final DataType keyType = projected(new int[] {keyIndex});
            keyDecoder = keyFormat.createRuntimeDecoder(context, keyType);
            valueDecoder = valueFormat.createRuntimeDecoder(context, projected(valueFields));
        } else {
            keyDecoder = null;
            valueDecoder = valueFormat.createRuntimeDecoder(context, physicalType);
        }
        final DimensionSpec spec = new DimensionSpec(identity, rowType, keyIndex, changelog, topic,
                consumerProperties, keyDecoder, valueDecoder, valueFields, filePath, pollTimeoutMillis,
                changelogBatchSize, indexSettings, bootstrapTimeoutMillis, snapshots);
        return AsyncLookupFunctionProvider.of(new FlixAsyncLookupFunction(spec, lookupFields, keyPosition,
                lookupBatchSize, lingerNanos));
    }

    /** A row of the given physical columns. */
    private DataType projected(int[] fields) {
        final List<DataTypes.Field> projected = new ArrayList<>();
        for (int f : fields) {
            projected.add(DataTypes.FIELD(DataType.getFieldNames(physicalType).get(f),
                    DataType.getFieldDataTypes(physicalType).get(f)));
        }
        return DataTypes.ROW(projected.toArray(new DataTypes.Field[0]));
    }

    @Override
    public DynamicTableSource copy() {
        return new FlixLookupTableSource(identity, physicalType, keyIndex, changelog, topic, consumerProperties,
                keyFormat, valueFormat, valueFields, filePath, pollTimeoutMillis, changelogBatchSize, indexSettings,
                lookupBatchSize, lingerNanos, bootstrapTimeoutMillis, snapshots);
    }

    @Override
    public String asSummaryString() {
        return "FliX(" + (changelog.equals(DimensionSpec.KAFKA) ? "topic=" + topic : "file=" + filePath) + ")";
    }

    // ---- for tests ----

    String identity() {
        return identity;
    }

    String changelog() {
        return changelog;
    }

    int keyIndex() {
        return keyIndex;
    }

    int[] valueFields() {
        return valueFields.clone();
    }

    IndexSettings indexSettings() {
        return indexSettings;
    }

    int lookupBatchSize() {
        return lookupBatchSize;
    }

    long lingerNanos() {
        return lingerNanos;
    }

    Map<String, String> consumerProperties() {
        return consumerProperties;
    }
}
