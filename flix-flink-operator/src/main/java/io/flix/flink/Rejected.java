package io.flix.flink;

import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

import java.util.Objects;

/** A record the enrichment could not use, with the reason; goes to the side output {@link FlixEnrichment#REJECTED}. */
public final class Rejected {

    /** Which input it came on: {@code "update"} or {@code "lookup"}. */
    public String input;
    public String reason;
    /** The record's {@code toString()}, cut to 1000 characters. */
    public String record;

    public Rejected() {
    }

    public Rejected(String input, String reason, Object record) {
        this.input = input;
        this.reason = reason;
        final String text = String.valueOf(record);
        this.record = text.length() > 1000 ? text.substring(0, 1000) : text;
    }

    /** A rejection as the side output's record, with the rejected record's timestamp where it had one. */
    public static StreamRecord<Rejected> of(String input, String reason, Object record, boolean hasTimestamp,
                                            long timestamp) {
        final Rejected value = new Rejected(input, reason, record);
        return hasTimestamp ? new StreamRecord<>(value, timestamp) : new StreamRecord<>(value);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Rejected r && Objects.equals(input, r.input) && Objects.equals(reason, r.reason)
                && Objects.equals(record, r.record);
    }

    @Override
    public int hashCode() {
        return Objects.hash(input, reason, record);
    }

    @Override
    public String toString() {
        return "Rejected{" + input + ": " + reason + ": " + record + '}';
    }
}
