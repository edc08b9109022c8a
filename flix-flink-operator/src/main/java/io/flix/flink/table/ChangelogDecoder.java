package io.flix.flink.table;

import org.apache.flink.api.common.functions.util.ListCollector;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.SimpleUserCodeClassLoader;
import org.apache.flink.util.UserCodeClassLoader;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns changelog records (Kafka key and value bytes, or file lines) into {@link UpdateBatch} entries: decodes them
 * with the table's formats, assembles the full physical row, and serializes it with Flink's
 * {@link RowDataSerializer}. One per reader thread.
 */
final class ChangelogDecoder {

    private final DimensionSpec spec;
    private final RowDataSerializer serializer;
    private final RowData.FieldGetter[] valueGetters;
    private final DataOutputSerializer out = new DataOutputSerializer(256);
    private final List<RowData> decoded = new ArrayList<>();
    private final ListCollector<RowData> collector = new ListCollector<>(decoded);
    private long skipped;

    ChangelogDecoder(DimensionSpec spec) throws Exception {
        this.spec = spec;
        this.serializer = new RowDataSerializer(spec.rowType());
        final RowType rowType = spec.rowType();
        final int[] valueFields = spec.valueFields();
        this.valueGetters = new RowData.FieldGetter[valueFields.length];
        for (int j = 0; j < valueFields.length; j++) {
            valueGetters[j] = RowData.createFieldGetter(rowType.getTypeAt(valueFields[j]), j);
        }
        final DeserializationSchema.InitializationContext context = new DeserializationSchema.InitializationContext() {
            @Override
            public MetricGroup getMetricGroup() {
                return new UnregisteredMetricsGroup();
            }

            @Override
            public UserCodeClassLoader getUserCodeClassLoader() {
                return SimpleUserCodeClassLoader.create(ChangelogDecoder.class.getClassLoader());
            }
        };
        if (spec.keyDecoder() != null) {
            spec.keyDecoder().open(context);
        }
        spec.valueDecoder().open(context);
    }

    /** Records without a usable key, or whose value decoded to nothing (a format told to skip errors). */
    long skipped() {
        return skipped;
    }

    /** An upsert-Kafka record: the key decides the row, a null value deletes it. */
    void addKafkaRecord(byte[] key, byte[] value, UpdateBatch batch) throws IOException {
        final RowData keyRow = key == null ? null : spec.keyDecoder().deserialize(key);
        if (keyRow == null || keyRow.isNullAt(0)) {
            skipped++;
            return;
        }
        final long k = keyRow.getLong(0);
        if (value == null) {
            batch.delete(k);
            return;
        }
        decoded.clear();
        spec.valueDecoder().deserialize(value, collector);
        if (decoded.isEmpty()) {
            skipped++;
            return;
        }
        for (RowData valueRow : decoded) {
            apply(k, valueRow, batch);
        }
    }

    /** A file line: a row of every column; a row the format marks as a delete deletes its key. */
    void addFileLine(byte[] line, UpdateBatch batch) throws IOException {
        decoded.clear();
        spec.valueDecoder().deserialize(line, collector);
        if (decoded.isEmpty()) {
            skipped++;
            return;
        }
        final int keyIndex = spec.keyIndex();
        for (RowData row : decoded) {
            if (row.isNullAt(keyIndex)) {
                skipped++;
                continue;
            }
            apply(row.getLong(keyIndex), row, batch);
        }
    }

    private void apply(long key, RowData valueRow, UpdateBatch batch) throws IOException {
        final RowKind kind = valueRow.getRowKind();
        if (kind == RowKind.DELETE) {
            batch.delete(key);
            return;
        }
        if (kind == RowKind.UPDATE_BEFORE) {
            return; // the UPDATE_AFTER that follows replaces the row
        }
        final GenericRowData row = new GenericRowData(RowKind.INSERT, spec.rowType().getFieldCount());
        final int[] valueFields = spec.valueFields();
        for (int j = 0; j < valueFields.length; j++) {
            row.setField(valueFields[j], valueGetters[j].getFieldOrNull(valueRow));
        }
        row.setField(spec.keyIndex(), key);
        out.clear();
        serializer.serialize(row, out);
        batch.upsert(key, out.getSharedBuffer(), out.length());
    }
}
