package io.flix.flink.table;

import io.flix.flink.IndexSettings;
import io.flix.flink.LookupKind;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.flink.table.lookup.LookupOptions;
import io.flix.flink.table.lookup.SqlEquality;
import io.flix.flink.table.spec.DimensionSpec;
import io.flix.flink.table.spec.SnapshotSettings;

import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.abilities.SupportsFilterPushDown;
import org.apache.flink.table.connector.source.lookup.AsyncLookupFunctionProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.expressions.FieldReferenceExpression;
import org.apache.flink.table.expressions.ResolvedExpression;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** The {@code 'flix'} table: lookups only, by the BIGINT primary key (see the package documentation). */
public final class FlixLookupTableSource implements LookupTableSource, SupportsFilterPushDown {

    /** The table's resolved options, schema and key, as one string: equal tables share one dimension. */
    private final String identity;
    private final DataType physicalType;
    /** Position of the BIGINT primary key among the physical columns. */
    private final int keyIndex;
    private final ChangelogOptions changelog;
    private final ChangelogFormats formats;
    private final IndexSettings indexSettings;
    private final LookupOptions lookup;
    /** Null where 'snapshot.path' is not set. */
    private final SnapshotSettings snapshots;

    FlixLookupTableSource(String identity, DataType physicalType, int keyIndex, ChangelogOptions changelog,
                          ChangelogFormats formats, IndexSettings indexSettings, LookupOptions lookup,
                          SnapshotSettings snapshots) {
        this.identity = identity;
        this.physicalType = physicalType;
        this.keyIndex = keyIndex;
        this.changelog = changelog;
        this.formats = formats;
        this.indexSettings = indexSettings;
        this.lookup = lookup;
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
        if (lookup.match() != LookupKind.EXACT && keys.length > 1) {
            final List<String> others = new ArrayList<>();
            for (int field : lookupFields) {
                if (field != keyIndex) {
                    others.add("'" + rowType.getFieldNames().get(field) + "'");
                }
            }
            throw new TableException("a lookup join on a 'flix' table with 'lookup.match' = '"
                    + lookup.match().name().toLowerCase(Locale.ROOT) + "' must equate its primary key column '"
                    + rowType.getFieldNames().get(keyIndex) + "' only: that equality stands for the "
                    + lookup.match().name().toLowerCase(Locale.ROOT) + " match, but the join also equates the "
                    + "columns " + others + ", so the lookup key is composite and those equalities would be held "
                    + "against the row of another key than the probe's. Drop them from the join condition, or use "
                    + "'lookup.match' = 'exact'.");
        }
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
        return AsyncLookupFunctionProvider.of(new FlixAsyncLookupFunction(dimensionSpec(context), lookupFields,
                keyPosition, lookup));
    }

    /**
     * What a task manager needs to hold this table, its decoders made in {@code context}: for the lookup join and
     * for the range function ({@link FlixRangeFunction}), which share one dimension per task manager.
     */
    DimensionSpec dimensionSpec(DynamicTableSource.Context context) {
        final DeserializationSchema<RowData> keyDecoder;
        final DeserializationSchema<RowData> valueDecoder;
        if (changelog.isKafka()) {
            final DataType keyType = projected(new int[] {keyIndex});
            keyDecoder = formats.keyFormat().createRuntimeDecoder(context, keyType);
            valueDecoder = formats.valueFormat().createRuntimeDecoder(context, projected(formats.valueFields()));
        } else {
            keyDecoder = null;
            valueDecoder = formats.valueFormat().createRuntimeDecoder(context, physicalType);
        }
        return new DimensionSpec(identity, (RowType) physicalType.getLogicalType(), keyIndex, changelog.changelog(),
                changelog.topic(), changelog.consumerProperties(), keyDecoder, valueDecoder, formats.valueFields(),
                changelog.filePath(), changelog.pollTimeout().toMillis(), changelog.batchSize(),
                changelog.decodeThreads(), indexSettings,
                lookup.bootstrapTimeout().toMillis(), snapshots);
    }

    /**
     * Accepts no filter: each stays with the planner, which evaluates it on the returned rows. With a floor or
     * ceiling match, refuses a filter on the primary key column (see the package documentation).
     */
    @Override
    public Result applyFilters(List<ResolvedExpression> filters) {
        if (lookup.match() != LookupKind.EXACT) {
            final String key = DataType.getFieldNames(physicalType).get(keyIndex);
            for (ResolvedExpression filter : filters) {
                if (references(filter, key)) {
                    final String match = lookup.match().name().toLowerCase(Locale.ROOT);
                    throw new TableException("a lookup join on a 'flix' table with 'lookup.match' = '" + match
                            + "' cannot honour the condition " + filter.asSummaryString() + " on its primary key "
                            + "column '" + key + "': Flink evaluates it on the returned row, whose key is the " + match
                            + " of the probe, not the probe. Flink's planner also writes such conditions itself, "
                            + "taking the join's equality for an exact one: with ON p.x = r." + key + ", WHERE "
                            + "p.x > 120 adds r." + key + " > 120 and p.x = 150 adds r." + key + " = 150. Put no "
                            + "condition on the key column nor on the probe column equated with it, or use "
                            + "'lookup.match' = 'exact'.");
                }
            }
        }
        return Result.of(List.of(), filters);
    }

    private static boolean references(ResolvedExpression e, String column) {
        if (e instanceof FieldReferenceExpression field && field.getName().equals(column)) {
            return true;
        }
        for (ResolvedExpression child : e.getResolvedChildren()) {
            if (references(child, column)) {
                return true;
            }
        }
        return false;
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
        return new FlixLookupTableSource(identity, physicalType, keyIndex, changelog, formats, indexSettings, lookup,
                snapshots);
    }

    @Override
    public String asSummaryString() {
        return "FliX(" + (changelog.isKafka() ? "topic=" + changelog.topic() : "file=" + changelog.filePath()) + ")";
    }

    // ---- for tests ----

    String identity() {
        return identity;
    }

    int keyIndex() {
        return keyIndex;
    }

    ChangelogOptions changelog() {
        return changelog;
    }

    ChangelogFormats formats() {
        return formats;
    }

    IndexSettings indexSettings() {
        return indexSettings;
    }

    LookupOptions lookup() {
        return lookup;
    }
}
