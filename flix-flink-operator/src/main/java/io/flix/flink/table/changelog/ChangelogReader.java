package io.flix.flink.table.changelog;

import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.table.spec.DimensionSpec;
/**
 * Reads a dimension's changelog on its own thread and applies it to the dimension in {@link SerializedUpdates}es, in
 * changelog order, one at a time ({@link ChangelogTarget#apply(SerializedUpdates)}: during the bootstrap on a thread
 * of the reader's own while it reads the next batch, after it on the reading thread), then says when it has applied
 * everything up to the changelog's end at open time ({@link ChangelogTarget#bootstrapApplied()}). A failure goes to
 * {@link ChangelogTarget#fail(Throwable)}.
 */
public abstract class ChangelogReader implements Runnable {

    final DimensionSpec spec;
    final ChangelogTarget dimension;
    volatile boolean running = true;
    private volatile ChangelogDecoder decoder;

    /**
     * Most payload bytes a batch gathers before it is applied, whatever 'changelog.batch-size' allows: the
     * bootstrap's large batches of wide rows hold no more memory than this.
     */
    static final long BATCH_PAYLOAD_BYTES = 64L << 20;

    ChangelogReader(DimensionSpec spec, ChangelogTarget dimension) {
        this.spec = spec;
        this.dimension = dimension;
    }

    @Override
    public final void run() {
        try {
            decoder = new ChangelogDecoder(spec);
            read(decoder);
        } catch (Throwable t) {
            if (running && !dimension.isClosing()) {
                dimension.fail(t);
            }
        }
    }

    /** Whether {@code batch} goes to the dimension now: it holds the batch size, or {@link #BATCH_PAYLOAD_BYTES}. */
    final boolean full(SerializedUpdates batch) {
        return batch.size() >= spec.changelogBatchSize() || batch.payloadBytes() >= BATCH_PAYLOAD_BYTES;
    }

    /** Reads until the changelog ends (a file) or {@link #stop()} (Kafka). */
    abstract void read(ChangelogDecoder decoder) throws Exception;

    /**
     * Where the reader is, for an error when the bootstrap takes too long: what it waits for, and the cause where
     * one is known (for Kafka, why the brokers do not answer). Called from any thread; may take a moment.
     */
    public abstract Progress progress();

    /** @param description what the reader is doing or waiting for; {@code cause} the reason, or null */
    public record Progress(String description, Throwable cause) {
    }

    /** Records read so far (Kafka: from where the reader started; the file: lines). */
    public abstract long recordsRead();

    /** Asks the reader to stop soon (a Kafka reader's poll is woken up). */
    public void stop() {
        running = false;
    }

    public long skipped() {
        final ChangelogDecoder d = decoder;
        return (d == null ? 0 : d.skipped()) + skippedBeyondDecoder();
    }

    /** Records skipped by decoders other than the reader's own (those that decode beside it). */
    long skippedBeyondDecoder() {
        return 0;
    }
}
