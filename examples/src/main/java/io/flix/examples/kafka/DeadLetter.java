package io.flix.examples.kafka;

/**
 * A record the pipeline could not use, with the reason, as written to the dead-letter topic. A Flink POJO.
 *
 * <p>Records that failed to parse carry where they came from and their original key and value: as text where the
 * bytes are UTF-8, else base64 ({@link #valueBase64}). Records the enrichment rejected carry the operator's reason
 * and the record's text.
 */
public class DeadLetter {
    /** {@code orders}, {@code products}, or {@code enrichment} for records the FliX operator rejected. */
    public String stage;
    public String reason;
    /** The source topic, partition and offset; null and -1 for records the enrichment rejected. */
    public String topic;
    public int partition = -1;
    public long offset = -1;
    public String key;
    /** The value as text; null where it was a tombstone or not UTF-8 (then see {@link #valueBase64}). */
    public String value;
    public String valueBase64;

    public DeadLetter() {
    }

    @Override
    public String toString() {
        return stage + " " + topic + "-" + partition + "@" + offset + ": " + reason;
    }
}
