package io.flix.flink.table.snapshot;

import io.flix.flink.table.spec.DimensionSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Chooses the snapshot a start loads, and loads it: the newest complete one, where it can give exactly what a read
 * of the whole topic would. A snapshot is a cache of the topic, never a second truth: where it cannot serve, the
 * table reads the whole topic, as it does without snapshots, and says why in a warning.
 *
 * <ul>
 *   <li><b>Refused</b> (the open fails): the newest snapshot is of another topic. The directory belongs to another
 *       table; reading on would have the two tables delete each other's snapshots. The error names both topics.</li>
 *   <li><b>The whole topic is read</b>, logged with the reason, where the newest snapshot does not match the table
 *       or the topic: another definition of the table (columns, key, formats or their options, the isolation level:
 *       its rows were decoded otherwise), another topic id (the topic was deleted and created again), a partition the
 *       topic no longer has, an offset below its partition's log start offset (retention deleted records the
 *       snapshot does not hold) or above its end offset (the topic was truncated or recreated). Older snapshots are
 *       not tried: they are older still. Nor is one where the directory cannot be listed.</li>
 *   <li><b>The next older complete snapshot is tried</b> where a snapshot's data does not load (its data file missing,
 *       shorter or longer than its manifest says, another checksum, a page that does not read): the newest that
 *       loads is used, else the whole topic is read.</li>
 * </ul>
 * Partitions the topic has gained since the snapshot are read from their beginning.
 *
 * <p>On a compacted topic ({@code cleanup.policy} holds {@code compact}) the log cleaner removes the records a
 * tombstone deletes and, {@code delete.retention.ms} later, the tombstone itself; no offset shows it. A snapshot
 * serves there only while every delete after its offsets is surely still in the topic: where its offsets are the
 * end offsets (nothing came after them), or where it is younger than the topic's {@code delete.retention.ms} less
 * a tenth of it ({@link #RETENTION_MARGIN_DIVISOR}: for the reader's lag behind the topic when the offsets were taken
 * and the clocks of the hosts). Its age is from when its offsets were taken to the restore's clock.
 */
public final class SnapshotRestore {

    private static final Logger LOG = LoggerFactory.getLogger(SnapshotRestore.class);

    /** The margin kept below a compacted topic's {@code delete.retention.ms}: this fraction of it. */
    static final int RETENTION_MARGIN_DIVISOR = 10;

    /**
     * The topic as the start finds it.
     *
     * @param deleteRetentionMs  the topic's {@code delete.retention.ms} where it is compacted; null where it is not
     * @param compactionUnknown  why the topic's cleanup settings are not known (they did not read); null where known
     * @param nowMillis          the restore's clock (epoch milliseconds), to age snapshots by
     */
    public record TopicState(String topicId, Map<Integer, Long> beginning, Map<Integer, Long> end, Long deleteRetentionMs,
                      String compactionUnknown, long nowMillis) {
    }

    /** The snapshot loaded, or null with the reason the whole topic is to be read. */
    public record Outcome(SnapshotManifest loaded, String wholeTopicReason) {
    }

    /** Loads a snapshot's rows into the dimension; throws, having changed nothing, where they do not load. */
    @FunctionalInterface
    public interface Loader {
        void load(SnapshotDirectory directory, SnapshotManifest manifest) throws Exception;
    }

    private SnapshotRestore() {
    }

    /**
     * Loads the newest complete snapshot that serves (see the class comment), or none.
     *
     * @throws IllegalStateException where the newest snapshot is of another topic
     */
    public static Outcome restore(SnapshotDirectory directory, DimensionSpec spec, TopicState topic, Loader loader) {
        final List<SnapshotDirectory.Published> published;
        try {
            published = directory.published();
        } catch (IOException e) {
            return wholeTopic(directory, "the snapshot directory cannot be listed: " + e);
        }
        final List<SnapshotManifest> complete = new ArrayList<>();
        for (SnapshotDirectory.Published p : published) {
            if (p.manifest() == null) {
                LOG.warn("FliX snapshot directory {}: the manifest {} does not read, so its snapshot does not count: "
                        + "{}", directory, p.fileName(), p.unreadable().getMessage());
            } else {
                complete.add(p.manifest());
            }
        }
        if (complete.isEmpty()) {
            return wholeTopic(directory, "it holds no complete snapshot");
        }
        if (!complete.get(0).topic().equals(spec.topic())) {
            throw new IllegalStateException(otherTopic(directory, complete.get(0), spec));
        }
        final List<String> unloadable = new ArrayList<>();
        for (SnapshotManifest manifest : complete) {
            final String mismatch = mismatch(manifest, spec, topic);
            if (mismatch != null) {
                return wholeTopic(directory, "snapshot " + manifest.sequence() + " does not serve: " + mismatch
                        + (unloadable.isEmpty() ? "" : "; newer ones did not load: " + unloadable));
            }
            try {
                loader.load(directory, manifest);
                if (!unloadable.isEmpty()) {
                    LOG.warn("FliX snapshot directory {}: loaded snapshot {}, newer ones did not load: {}", directory,
                            manifest.sequence(), unloadable);
                }
                return new Outcome(manifest, null);
            } catch (Exception e) {
                LOG.warn("FliX snapshot directory {}: snapshot {} does not load; trying the one before it", directory,
                        manifest.sequence(), e);
                unloadable.add("snapshot " + manifest.sequence() + ": " + e.getMessage());
            }
        }
        return wholeTopic(directory, "no complete snapshot loads: " + unloadable);
    }

    private static Outcome wholeTopic(SnapshotDirectory directory, String reason) {
        return new Outcome(null, "snapshot directory " + directory + ": " + reason);
    }

    /** Why a snapshot cannot give what the topic would, or null where it can. */
    public static String mismatch(SnapshotManifest manifest, DimensionSpec spec, TopicState topic) {
        if (!manifest.topic().equals(spec.topic())) {
            return "it is of topic '" + manifest.topic() + "', the table reads topic '" + spec.topic() + "'";
        }
        if (!manifest.definition().equals(spec.snapshots().definition())) {
            return "it was written for another definition of the table (its columns, key, formats, their options or "
                    + "the isolation level changed): the snapshot's is [" + manifest.definition() + "], the table's "
                    + "is [" + spec.snapshots().definition() + "]";
        }
        if (manifest.topicId() != null && topic.topicId() != null && !manifest.topicId().equals(topic.topicId())) {
            return "topic '" + spec.topic() + "' has the id " + topic.topicId() + ", the snapshot's had "
                    + manifest.topicId() + ": the topic was deleted and created again";
        }
        for (Map.Entry<Integer, Long> offset : manifest.offsets().entrySet()) {
            final int partition = offset.getKey();
            final Long beginning = topic.beginning().get(partition);
            final Long end = topic.end().get(partition);
            if (beginning == null || end == null) {
                return "it holds partition " + partition + ", which topic '" + spec.topic() + "' (" + topic.end().size()
                        + " partitions) does not have";
            }
            if (offset.getValue() < beginning) {
                return "its offset " + offset.getValue() + " of partition " + partition + " is below the partition's "
                        + "log start offset " + beginning + ": retention deleted records the snapshot does not hold";
            }
            if (offset.getValue() > end) {
                return "its offset " + offset.getValue() + " of partition " + partition + " is beyond the "
                        + "partition's end offset " + end + ": the topic was truncated or recreated";
            }
        }
        return compactionMismatch(manifest, spec, topic);
    }

    /** Why a snapshot may miss deletes the log cleaner removed from a compacted topic, or null where it cannot. */
    private static String compactionMismatch(SnapshotManifest manifest, DimensionSpec spec, TopicState topic) {
        boolean atEnd = true;
        for (Map.Entry<Integer, Long> offset : manifest.offsets().entrySet()) {
            atEnd &= offset.getValue().equals(topic.end().get(offset.getKey()));
        }
        if (atEnd) {
            return null; // nothing after its offsets, so nothing the cleaner could have removed
        }
        if (topic.compactionUnknown() != null) {
            return "the cleanup settings of topic '" + spec.topic() + "' do not read (" + topic.compactionUnknown()
                    + "), so whether the log cleaner removed deletes after the snapshot's offsets is not known";
        }
        if (topic.deleteRetentionMs() == null) {
            return null;
        }
        final long offsetsAt;
        try {
            offsetsAt = manifest.offsetsAtMillis() != null ? manifest.offsetsAtMillis()
                    : java.time.Instant.parse(manifest.writtenAt()).toEpochMilli();
        } catch (RuntimeException e) {
            return "its age is not known (written at '" + manifest.writtenAt() + "'), and topic '" + spec.topic()
                    + "' is compacted";
        }
        final long retention = topic.deleteRetentionMs();
        final long limit = retention - retention / RETENTION_MARGIN_DIVISOR;
        final long age = topic.nowMillis() - offsetsAt;
        if (age > limit) {
            return "it is " + age + " ms old and topic '" + spec.topic() + "' is compacted with delete.retention.ms "
                    + retention + " ms (a snapshot serves up to " + limit + " ms, a tenth kept as a margin): the log "
                    + "cleaner may have removed deletes after its offsets";
        }
        return null;
    }

    /** The error of a directory whose newest snapshot is of another topic. */
    static String otherTopic(SnapshotDirectory directory, SnapshotManifest newest, DimensionSpec spec) {
        return "the snapshot directory " + directory + " ('snapshot.path') holds snapshots of topic '" + newest.topic()
                + "' (the newest: " + newest.dataFile() + "), and this table reads topic '" + spec.topic()
                + "': give each table its own 'snapshot.path', or delete the old table's snapshots there";
    }
}
