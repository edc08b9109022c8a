package io.flix.flink.table;

import io.flix.flink.table.spec.SnapshotSettings;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.factories.utils.FactoryMocks;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The snapshot options as the factory reads them, and the table definition a snapshot must match. */
class SnapshotSettingsTest {

    private static final ResolvedSchema SCHEMA = new ResolvedSchema(
            List.of(Column.physical("id", DataTypes.BIGINT().notNull()), Column.physical("name", DataTypes.STRING())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());

    private static Map<String, String> kafka() {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("topic", "products");
        options.put("properties.bootstrap.servers", "broker:9092");
        options.put("snapshot.path", "s3://bucket/flix/products");
        return options;
    }

    private static SnapshotSettings settings(ResolvedSchema schema, Map<String, String> options) {
        return TestTables.function(schema, options, new int[] {0}).spec().snapshots();
    }

    /** The whole cause chain's messages: the planner wraps the factory's exception. */
    private static String failure(Map<String, String> options) {
        final Throwable thrown = assertThrows(Throwable.class, () -> FactoryMocks.createTableSource(SCHEMA, options));
        final StringBuilder messages = new StringBuilder();
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            messages.append(t.getMessage()).append('\n');
        }
        return messages.toString();
    }

    @Test
    void snapshotsAreOffWithoutAPathAndEveryTenMinutesByDefault() {
        final Map<String, String> options = kafka();
        options.remove("snapshot.path");
        assertNull(settings(SCHEMA, options));
        final SnapshotSettings settings = settings(SCHEMA, kafka());
        assertEquals("s3://bucket/flix/products", settings.path());
        assertEquals(600_000, settings.intervalMillis());
        final Map<String, String> often = kafka();
        often.put("snapshot.interval", "30 s");
        assertEquals(30_000, settings(SCHEMA, often).intervalMillis());
    }

    @Test
    void unusableSnapshotOptionsAreRefusedNamingTheOption() {
        final Map<String, String> file = kafka();
        file.put("changelog", "file");
        file.put("file.path", "/tmp/products.jsonl");
        final String onFile = failure(file);
        assertTrue(onFile.contains("'snapshot.path'") && onFile.contains("'kafka'"), onFile);

        final Map<String, String> zero = kafka();
        zero.put("snapshot.interval", "0 s");
        final String zeroInterval = failure(zero);
        assertTrue(zeroInterval.contains("'snapshot.interval' must be positive"), zeroInterval);

        final Map<String, String> noUri = kafka();
        noUri.put("snapshot.path", "s3:bucket/flix");
        final String notAPath = failure(noUri);
        assertTrue(notAPath.contains("'snapshot.path'") && notAPath.contains("s3:bucket/flix"), notAPath);
    }

    /**
     * What decides the rows of a snapshot is in its definition (columns, formats and their options, the fields in
     * the value, the isolation level); what does not (lookup, index and snapshot options, the brokers) is not.
     */
    @Test
    void theDefinitionChangesWithWhatDecidesTheRowsOnly() {
        final String base = settings(SCHEMA, kafka()).definition();
        for (Map.Entry<String, String> same : Map.of("lookup.batch-size", "7", "index.backend", "cpu",
                "snapshot.interval", "1 h", "properties.bootstrap.servers", "other:9092",
                "properties.security.protocol", "SSL", "value.format", "json", "value.fields-include", "ALL",
                "properties.isolation.level", "read_committed").entrySet()) {
            final Map<String, String> options = kafka();
            options.put(same.getKey(), same.getValue());
            assertEquals(base, settings(SCHEMA, options).definition(), same.getKey());
        }
        for (Map.Entry<String, String> other : Map.of("value.json.ignore-parse-errors", "true",
                "key.json.timestamp-format.standard", "ISO-8601", "value.fields-include", "EXCEPT_KEY",
                "properties.isolation.level", "read_uncommitted", "value.format", "debezium-json").entrySet()) {
            final Map<String, String> options = kafka();
            options.put(other.getKey(), other.getValue());
            assertNotEquals(base, settings(SCHEMA, options).definition(), other.getKey());
        }
        final ResolvedSchema wider = new ResolvedSchema(List.of(Column.physical("id", DataTypes.BIGINT().notNull()),
                Column.physical("name", DataTypes.STRING()), Column.physical("price", DataTypes.DOUBLE())),
                List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());
        assertNotEquals(base, settings(wider, kafka()).definition(), "another column");
    }
}
