package io.flix.flink.table;

import io.flix.flink.dimension.SerializedUpdates;
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

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Turns changelog records (Kafka key and value bytes, or file lines) into {@link SerializedUpdates} entries: decodes them
 * with the table's formats, assembles the full physical row, and serializes it with Flink's
 * {@link RowDataSerializer}. One per reader thread.
 *
 * <p>A record is skipped, and counted, where it has no usable key or where its value decodes to nothing or to a
 * null row: a format told to skip what it cannot parse (for example {@code 'value.json.ignore-parse-errors'})
 * yields nothing for some bad records and a null row for others (Flink's JSON format, for a record that breaks off
 * inside the row). Skipped records are logged as a warning naming where they are, at most one line a minute.
 */
final class ChangelogDecoder {

    private static final Logger LOG = LoggerFactory.getLogger(ChangelogDecoder.class);
    /** Least time between two warnings about skipped records. */
    private static final long WARN_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final DimensionSpec spec;
    private final RowDataSerializer serializer;
    private final RowData.FieldGetter[] valueGetters;
    private final DataOutputSerializer out = new DataOutputSerializer(256);
    private final List<RowData> decoded = new ArrayList<>();
    private final ListCollector<RowData> collector = new ListCollector<>(decoded);
    /** Written by the reader thread only; read by gauges. */
    private volatile long skipped;
    /** The key of an update-before row not yet matched by its update-after (within one record). */
    private long beforeKey;
    private boolean beforePending;
    private long lastWarnNanos;
    private long skippedAtLastWarn;
    private boolean warned;

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

    /** Records without a usable key, or whose value decoded to nothing or to a null row. */
    long skipped() {
        return skipped;
    }

    /**
     * An upsert-Kafka record: the key decides the row, a null value deletes it. {@code partition} and
     * {@code offset} say where it is, for the warning when it is skipped.
     */
    void addKafkaRecord(int partition, long offset, byte[] key, byte[] value, SerializedUpdates batch)
            throws IOException {
        final RowData keyRow = key == null ? null : spec.keyDecoder().deserialize(key);
        if (keyRow == null || keyRow.isNullAt(0)) {
            skip(key == null ? "it has no key" : "its key decodes to no key value", "partition " + partition
                    + " offset " + offset);
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
            skip("its value decodes to no row", "partition " + partition + " offset " + offset);
            return;
        }
        for (RowData valueRow : decoded) {
            if (valueRow == null) {
                skip("its value decodes to a null row", "partition " + partition + " offset " + offset);
                continue;
            }
            apply(k, valueRow, batch);
        }
        endOfRecord(batch);
    }

    /** A file line (numbered from 1): a row of every column; a row the format marks as a delete deletes its key. */
    void addFileLine(long lineNumber, byte[] line, SerializedUpdates batch) throws IOException {
        decoded.clear();
        spec.valueDecoder().deserialize(line, collector);
        if (decoded.isEmpty()) {
            skip("it decodes to no row", "line " + lineNumber);
            return;
        }
        final int keyIndex = spec.keyIndex();
        for (RowData row : decoded) {
            if (row == null) {
                skip("it decodes to a null row", "line " + lineNumber);
                continue;
            }
            if (row.isNullAt(keyIndex)) {
                skip("its key column is null", "line " + lineNumber);
                continue;
            }
            apply(row.getLong(keyIndex), row, batch);
        }
        endOfRecord(batch);
    }

    /** A record's rows are all applied: an update-before left unmatched deletes its key. */
    private void endOfRecord(SerializedUpdates batch) {
        if (beforePending) {
            batch.delete(beforeKey);
            beforePending = false;
        }
    }

    /** Counts a skipped record; warns about the first one and then at most once a minute, with the count since. */
    private void skip(String reason, String where) {
        skipped++;
        final long now = System.nanoTime();
        if (warned && now - lastWarnNanos < WARN_INTERVAL_NANOS) {
            return;
        }
        LOG.warn("The 'flix' table's changelog ({}): skipped the record at {}: {} ({} records skipped in all, {} "
                        + "since the last warning; the next warning comes a minute after this one at the earliest)",
                spec.describeChangelog(), where, reason, skipped, skipped - skippedAtLastWarn);
        warned = true;
        lastWarnNanos = now;
        skippedAtLastWarn = skipped;
    }

    /**
     * Applies one decoded row. An update-before row (the row as it was) is held until the next row: an update-after of
     * the same key replaces the row in place, so it needs no delete (a lookup never sees the key missing); anything
     * else (an update-after of another key: the update changed the row's key; another kind; the record's end) means
     * the old key is gone, so it is deleted first.
     */
    private void apply(long key, RowData valueRow, SerializedUpdates batch) throws IOException {
        final RowKind kind = valueRow.getRowKind();
        if (beforePending && !(kind == RowKind.UPDATE_AFTER && key == beforeKey)) {
            batch.delete(beforeKey);
        }
        beforePending = false;
        if (kind == RowKind.UPDATE_BEFORE) {
            beforePending = true;
            beforeKey = key;
            return;
        }
        if (kind == RowKind.DELETE) {
            batch.delete(key);
            return;
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
