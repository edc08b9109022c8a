package io.flix.flink.table.changelog;

import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.table.snapshot.SnapshotDirectory;
import io.flix.flink.table.snapshot.SnapshotManifest;
import io.flix.flink.table.snapshot.SnapshotWriter;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;

/**
 * What a changelog reader applies its records to and reports to: the table's dimension. An interface so that the
 * readers need not know the dimension that starts them.
 */
public interface ChangelogTarget {

    /** Applies one batch of changelog records. */
    void apply(SerializedUpdates updates) throws IOException;

    /** The changelog has been applied up to where it ended when the table opened. */
    void bootstrapApplied();

    /** What is left of the bootstrap's time; zero once the deadline has passed. */
    Duration bootstrapTimeLeft();

    /** The error of a bootstrap that ran out of time. */
    Exception bootstrapTimeout();

    /** The snapshots of the table, or null where they are off. */
    SnapshotWriter snapshots();

    /** Loads a snapshot into the (empty) dimension. */
    void loadSnapshot(SnapshotDirectory directory, SnapshotManifest manifest) throws Exception;

    /** Kafka: the topic's id and the offsets the reader starts from, and why not from a snapshot (null if it does). */
    void readingFrom(String topicId, Map<Integer, Long> offsets, String wholeTopicReason);

    /** Kafka: the offsets up to which the changelog has been applied. */
    void appliedThrough(Map<Integer, Long> offsets);

    /** Fails the table: every lookup not answered yet and every later one. */
    void fail(Throwable cause);

    /** Whether the dimension is closing (a reader's failure then is no failure). */
    boolean isClosing();

    /** The dimension, for messages. */
    String describe();
}
