package io.flix.flink.table;

import io.flix.flink.dimension.SerializedUpdates;
/**
 * Reads a dimension's changelog on its own thread and applies it to the dimension in {@link SerializedUpdates}es, in
 * changelog order ({@link SharedDimension#apply(SerializedUpdates)}, on this thread), then says when it has applied
 * everything up to the changelog's end at open time ({@link SharedDimension#bootstrapApplied()}). A failure goes to
 * {@link SharedDimension#fail(Throwable)}.
 */
abstract class ChangelogReader implements Runnable {

    final DimensionSpec spec;
    final SharedDimension dimension;
    volatile boolean running = true;
    private volatile ChangelogDecoder decoder;

    ChangelogReader(DimensionSpec spec, SharedDimension dimension) {
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

    /** Reads until the changelog ends (a file) or {@link #stop()} (Kafka). */
    abstract void read(ChangelogDecoder decoder) throws Exception;

    /**
     * Where the reader is, for an error when the bootstrap takes too long: what it waits for, and the cause where
     * one is known (for Kafka, why the brokers do not answer). Called from any thread; may take a moment.
     */
    abstract Progress progress();

    /** @param description what the reader is doing or waiting for; {@code cause} the reason, or null */
    record Progress(String description, Throwable cause) {
    }

    /** Records read so far (Kafka: from where the reader started; the file: lines). */
    abstract long recordsRead();

    /** Asks the reader to stop soon (a Kafka reader's poll is woken up). */
    void stop() {
        running = false;
    }

    long skipped() {
        final ChangelogDecoder d = decoder;
        return d == null ? 0 : d.skipped();
    }
}
