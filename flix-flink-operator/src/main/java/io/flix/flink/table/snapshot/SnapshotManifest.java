package io.flix.flink.table.snapshot;

import io.flix.flink.table.spec.SnapshotSettings;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.DeserializationFeature;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.SerializationFeature;

import java.io.IOException;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * What one snapshot of a {@code 'flix'} table holds, written as JSON beside its data file once the data file is
 * complete: a snapshot counts only where its manifest is published (see {@link SnapshotDirectory}).
 *
 * @param format     the manifest's format, {@link #FORMAT}
 * @param sequence   orders the snapshots of a directory: the newest has the highest
 * @param topic      the Kafka topic the rows come from
 * @param topicId    the topic's id (a topic deleted and created again under the same name has another)
 * @param definition the table's definition, {@link SnapshotSettings#definition()}
 * @param offsets    per partition, the offset to read on from: every record before it is in the rows
 * @param keys       keys in the data file
 * @param pages      chunks in the data file ({@link io.flix.flink.state.KeyGroupSnapshotCodec} format)
 * @param dataFile   the data file's name, in the same directory
 * @param dataBytes  the data file's length
 * @param dataCrc32c the CRC-32C of the data file's bytes
 * @param writtenAt  when it was published (ISO-8601), for people
 * @param writtenBy  the host that wrote it, for people
 * @param offsetsAtMillis when the offsets were taken (epoch milliseconds): the snapshot's age for a compacted topic
 *                   ({@link SnapshotRestore}); null in manifests written before it was recorded
 */
public record SnapshotManifest(int format, long sequence, String topic, String topicId, String definition,
                        SortedMap<Integer, Long> offsets, long keys, int pages, String dataFile, long dataBytes,
                        long dataCrc32c, String writtenAt, String writtenBy, Long offsetsAtMillis) {

    public static final int FORMAT = 1;

    private static final ObjectMapper JSON = new ObjectMapper()
            .enable(SerializationFeature.INDENT_OUTPUT)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    public SnapshotManifest {
        offsets = offsets == null ? null : new TreeMap<>(offsets);
    }

    byte[] toJson() {
        try {
            return JSON.writeValueAsBytes(this);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("the snapshot manifest does not serialize: " + e.getMessage(), e);
        }
    }

    /** Parses and checks a manifest; an {@link IOException} names what is wrong with it. */
    static SnapshotManifest fromJson(byte[] json) throws IOException {
        final SnapshotManifest manifest;
        try {
            manifest = JSON.readValue(json, SnapshotManifest.class);
        } catch (IOException e) {
            throw new IOException("not a snapshot manifest: " + e.getMessage(), e);
        }
        if (manifest.format != FORMAT) {
            throw new IOException("manifest format " + manifest.format + "; this version reads format " + FORMAT);
        }
        if (manifest.topic == null || manifest.definition == null || manifest.offsets == null
                || manifest.dataFile == null || manifest.dataFile.contains("/")) {
            throw new IOException("the manifest lacks its topic, definition, offsets or data file");
        }
        if (manifest.keys < 0 || manifest.pages < 0 || manifest.dataBytes < 0) {
            throw new IOException("the manifest claims " + manifest.keys + " keys in " + manifest.pages
                    + " pages of " + manifest.dataBytes + " bytes");
        }
        for (Map.Entry<Integer, Long> offset : manifest.offsets.entrySet()) {
            if (offset.getKey() == null || offset.getKey() < 0 || offset.getValue() == null
                    || offset.getValue() < 0) {
                throw new IOException("the manifest holds the offset " + offset.getValue() + " for partition "
                        + offset.getKey());
            }
        }
        return manifest;
    }
}
