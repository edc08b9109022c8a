package io.flix.flink.table;

import io.flix.flink.table.snapshot.SnapshotManifest;
import io.flix.flink.table.snapshot.SnapshotRestore;
import io.flix.flink.table.spec.DimensionSpec;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The restore's decision on a compacted topic, with the clock given by the test: a snapshot serves while it is younger
 * than the topic's delete.retention.ms less the margin, or where nothing came after its offsets.
 */
class SnapshotRestoreTest {

    private static final ResolvedSchema SCHEMA = new ResolvedSchema(List.of(
            Column.physical("id", DataTypes.BIGINT().notNull()),
            Column.physical("name", DataTypes.STRING())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());
    private static final long TAKEN_AT = 1_700_000_000_000L;
    private static final long RETENTION = 100_000;
    /** delete.retention.ms less a tenth. */
    private static final long LIMIT = 90_000;

    private static DimensionSpec spec() {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("topic", "products");
        options.put("properties.bootstrap.servers", "localhost:9092");
        options.put("snapshot.path", "/tmp/flix-snapshots-unused");
        return TestTables.function(SCHEMA, options, new int[] {0}).spec();
    }

    private static SnapshotManifest manifest(DimensionSpec spec, Long offsetsAt, String writtenAt) {
        return new SnapshotManifest(SnapshotManifest.FORMAT, 1, "products", "id-1", spec.snapshots().definition(),
                new TreeMap<>(Map.of(0, 50L)), 50, 1, "data", 10, 0, writtenAt, "test", offsetsAt);
    }

    private static SnapshotRestore.TopicState topic(long end, Long retention, String unknown, long now) {
        return new SnapshotRestore.TopicState("id-1", Map.of(0, 0L), Map.of(0, end), retention, unknown, now);
    }

    @Test
    void aCompactedTopicsSnapshotServesUpToItsDeleteRetentionLessTheMargin() {
        final DimensionSpec spec = spec();
        final SnapshotManifest manifest = manifest(spec, TAKEN_AT, "2023-11-14T22:13:20Z");
        assertNull(SnapshotRestore.mismatch(manifest, spec, topic(60, RETENTION, null, TAKEN_AT + LIMIT)));
        final String reason = SnapshotRestore.mismatch(manifest, spec, topic(60, RETENTION, null,
                TAKEN_AT + LIMIT + 1));
        assertTrue(reason != null && reason.contains("90001 ms old") && reason.contains("compacted")
                && reason.contains("delete.retention.ms 100000"), reason);
    }

    @Test
    void aSnapshotAtTheTopicsEndServesAtAnyAge() {
        final DimensionSpec spec = spec();
        assertNull(SnapshotRestore.mismatch(manifest(spec, TAKEN_AT, "x"), spec,
                topic(50, RETENTION, null, TAKEN_AT + 100 * RETENTION)));
    }

    @Test
    void aTopicThatIsNotCompactedHasNoAgeLimit() {
        final DimensionSpec spec = spec();
        assertNull(SnapshotRestore.mismatch(manifest(spec, TAKEN_AT, "x"), spec,
                topic(60, null, null, TAKEN_AT + 100 * RETENTION)));
    }

    @Test
    void cleanupSettingsThatDoNotReadMeanTheWholeTopic() {
        final DimensionSpec spec = spec();
        final String reason = SnapshotRestore.mismatch(manifest(spec, TAKEN_AT, "x"), spec,
                topic(60, null, "TopicAuthorizationException", TAKEN_AT));
        assertTrue(reason != null && reason.contains("TopicAuthorizationException"), reason);
    }

    /** A manifest written before the offsets' time was recorded is aged from its write time. */
    @Test
    void anOlderManifestIsAgedFromItsWriteTime() {
        final DimensionSpec spec = spec();
        final SnapshotManifest old = manifest(spec, null, java.time.Instant.ofEpochMilli(TAKEN_AT).toString());
        assertNull(SnapshotRestore.mismatch(old, spec, topic(60, RETENTION, null, TAKEN_AT + LIMIT)));
        assertTrue(SnapshotRestore.mismatch(old, spec, topic(60, RETENTION, null, TAKEN_AT + LIMIT + 1)) != null);
    }
}
