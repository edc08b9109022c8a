package io.flix.flink.table.snapshot;

import io.flix.flink.dimension.LocalDimension;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Map;

/**
 * What a snapshot is written from: the table's dimension. An interface so that the snapshots need not know the
 * dimension that holds them.
 */
public interface SnapshotSource {

    /** Kafka: the offsets up to which the changelog has been applied. */
    Map<Integer, Long> appliedOffsets();

    /** Kafka: the id of the topic read. */
    String topicId();

    /** Writes the rows page by page, each page copied under the dimension's shared lock. */
    LocalDimension.PagedSnapshot writePages(OutputStream out, int pageKeys) throws IOException;

    /** Whether the dimension is closing (a write then ends at its next page). */
    boolean isClosing();

    /** The dimension, for messages. */
    String describe();
}
