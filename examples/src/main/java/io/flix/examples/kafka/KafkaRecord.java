package io.flix.examples.kafka;

/**
 * A Kafka record as it came off the topic, before parsing: parsing happens in the job, so that a record that does
 * not parse can go to the dead-letter topic instead of failing the source. A Flink POJO.
 */
public class KafkaRecord {
    public String topic;
    public int partition;
    public long offset;
    /** The record's timestamp (the producer's create time): the event time. */
    public long timestamp;
    /** Null where the record has no key. */
    public byte[] key;
    /** Null for a tombstone. */
    public byte[] value;

    public KafkaRecord() {
    }

    public KafkaRecord(String topic, int partition, long offset, long timestamp, byte[] key, byte[] value) {
        this.topic = topic;
        this.partition = partition;
        this.offset = offset;
        this.timestamp = timestamp;
        this.key = key;
        this.value = value;
    }

    @Override
    public String toString() {
        return topic + "-" + partition + "@" + offset;
    }
}
