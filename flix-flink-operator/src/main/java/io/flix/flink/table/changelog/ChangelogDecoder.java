package io.flix.flink.table.changelog;

import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.table.spec.DimensionSpec;
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
import org.apache.flink.util.InstantiationUtil;
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
 * {@link RowDataSerializer}. One per thread: a copy ({@link #copy()}) decodes with formats of its own.
 *
 * <p>A record is skipped, and counted, where it has no usable key or where its value decodes to nothing or to a
 * null row: a format told to skip what it cannot parse (for example {@code 'value.json.ignore-parse-errors'})
 * yields nothing for some bad records and a null row for others (Flink's JSON format, for a record that breaks off
 * inside the row). Skipped records are logged as a warning naming where they are, at most one line a minute.
 */
public final class ChangelogDecoder {

    private static final Logger LOG = LoggerFactory.getLogger(ChangelogDecoder.class);
    /** Least time between two warnings about skipped records. */
    private static final long WARN_INTERVAL_NANOS = TimeUnit.MINUTES.toNanos(1);

    private final DimensionSpec spec;
    /** The spec's decoders, or copies of them (a format's decoder is not safe for two threads). */
    private final DeserializationSchema<RowData> keyDecoder;
    private final DeserializationSchema<RowData> valueDecoder;
    private final RowDataSerializer serializer;
    private final RowData.FieldGetter[] valueGetters;
    private final DataOutputSerializer out = new DataOutputSerializer(256);
    private final List<RowData> decoded = new ArrayList<>();
    private final ListCollector<RowData> collector = new ListCollector<>(decoded);
    /** Written by the reader thread only; read by gauges. */
    private volatile long skipped;
    private long lastWarnNanos;
    private long skippedAtLastWarn;
    private boolean warned;
    /** An UPDATE_BEFORE's key not yet matched by the record's next row: a delete unless that row has the same key. */
    private boolean beforePending;
    private long beforeKey;

    ChangelogDecoder(DimensionSpec spec) throws Exception {
        this(spec, spec.keyDecoder(), spec.valueDecoder());
    }

    private ChangelogDecoder(DimensionSpec spec, DeserializationSchema<RowData> keyDecoder,
                             DeserializationSchema<RowData> valueDecoder) throws Exception {
        this.spec = spec;
        this.keyDecoder = keyDecoder;
        this.valueDecoder = valueDecoder;
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
        if (keyDecoder != null) {
            keyDecoder.open(context);
        }
        valueDecoder.open(context);
    }

    /** A decoder of the same spec with copies of its formats' decoders (serialized and read back), opened. */
    ChangelogDecoder copy() throws Exception {
        final ClassLoader loader = ChangelogDecoder.class.getClassLoader();
        return new ChangelogDecoder(spec, keyDecoder == null ? null : InstantiationUtil.clone(keyDecoder, loader),
                InstantiationUtil.clone(valueDecoder, loader));
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
        final RowData keyRow = key == null ? null : keyDecoder.deserialize(key);
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
        valueDecoder.deserialize(value, collector);
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
        settleBefore(batch);
    }

    /** A file line (numbered from 1): a row of every column; a row the format marks as a delete deletes its key. */
    void addFileLine(long lineNumber, byte[] line, SerializedUpdates batch) throws IOException {
        decoded.clear();
        try {
            valueDecoder.deserialize(line, collector);
        } catch (IOException | RuntimeException e) {
            // the format's own message names neither the file nor the line
            throw new IOException("The 'flix' table's changelog " + spec.describeChangelog() + ": line " + lineNumber
                    + " cannot be decoded (set the format's ignore-parse-errors option to skip such lines): "
                    + e.getMessage(), e);
        }
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
        settleBefore(batch);
    }

    /** A record's rows ended after an UPDATE_BEFORE without its UPDATE_AFTER: the old row is gone. */
    private void settleBefore(SerializedUpdates batch) {
        if (beforePending) {
            beforePending = false;
            batch.delete(beforeKey);
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

    private void apply(long key, RowData valueRow, SerializedUpdates batch) throws IOException {
        final RowKind kind = valueRow.getRowKind();
        // Every changelog format emits UPDATE_BEFORE then UPDATE_AFTER from one record: the after row replaces the
        // before row where the key is the same; where the key changed, the old key must go.
        if (beforePending) {
            beforePending = false;
            if (beforeKey != key) {
                batch.delete(beforeKey);
            }
        }
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
