package io.flix.flink.table;

/**
 * Reads a dimension's changelog on its own thread and hands it to the dimension in {@link UpdateBatch}es, then
 * says when it has handed over everything up to the changelog's end at open time
 * ({@link SharedDimension#bootstrapSubmitted()}). A failure goes to {@link SharedDimension#fail(Throwable)}.
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

    /** Asks the reader to stop soon; the thread is also interrupted. */
    void stop() {
        running = false;
    }

    long skipped() {
        final ChangelogDecoder d = decoder;
        return d == null ? 0 : d.skipped();
    }
}
