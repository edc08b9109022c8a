package io.flix.flink.table.changelog;

import io.flix.flink.dimension.SerializedUpdates;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Decodes a poll's Kafka records on several threads, for the bootstrap: the table answers no lookup until it is done,
 * and one thread decoding the records (a JSON format, say) bounds it. The records are cut into contiguous slices,
 * each decoded by a decoder of its own (its own copies of the formats) into updates of its own; the slices' updates
 * then join the batch in record order, so the batch holds what decoding the records one by one would give. The
 * slices are decoded while the reader goes on (it polls the next records meanwhile); one poll at a time, since each
 * slice's decoder serves one slice at a time.
 */
final class SlicedDecoding implements AutoCloseable {

    /** Fewest records of a slice: below this a thread costs more than it saves. */
    static final int MIN_RECORDS_PER_SLICE = 512;

    private final ChangelogDecoder[] decoders;
    private final ExecutorService threads;
    /** The decoding started and not yet added to a batch, or null. */
    private Decoding started;

    /**
     * @param decoder the reader's own decoder, for the first slice
     * @param slices  the most slices a poll is cut into, each on a thread of the pool
     */
    SlicedDecoding(ChangelogDecoder decoder, int slices, String threadName) throws Exception {
        if (slices < 2) {
            throw new IllegalArgumentException("sliced decoding needs at least 2 slices, was " + slices);
        }
        decoders = new ChangelogDecoder[slices];
        decoders[0] = decoder;
        for (int s = 1; s < slices; s++) {
            decoders[s] = decoder.copy();
        }
        threads = Executors.newFixedThreadPool(slices, runnable -> {
            final Thread thread = new Thread(runnable, threadName);
            thread.setDaemon(true);
            return thread;
        });
    }

    /** Records the other slices' decoders skipped (the first one's are the reader decoder's own). */
    long skippedByOthers() {
        long skipped = 0;
        for (int s = 1; s < decoders.length; s++) {
            skipped += decoders[s].skipped();
        }
        return skipped;
    }

    /** Whether a poll of {@code records} records is cut into more than one slice. */
    static boolean worthSlicing(int records) {
        return records / MIN_RECORDS_PER_SLICE >= 2;
    }

    /**
     * Starts decoding the records of a poll on the pool's threads and returns at once; {@link Decoding#addTo} adds
     * their updates to a batch. {@code runs}: the poll's records, one list a partition, in the poll's order (as
     * iterating the poll gives them), so that no list of every record is gathered first. The decoding before must
     * have been added (the reader's own decoder, the first slice's, serves it too).
     */
    Decoding start(List<List<ConsumerRecord<byte[], byte[]>>> runs) {
        if (started != null) {
            throw new IllegalStateException("the poll decoded before was not added to a batch yet");
        }
        int n = 0;
        for (List<ConsumerRecord<byte[], byte[]>> run : runs) {
            n += run.size();
        }
        final int slices = Math.max(1, Math.min(decoders.length, n / MIN_RECORDS_PER_SLICE));
        final SerializedUpdates[] parts = new SerializedUpdates[slices];
        final List<Future<?>> work = new ArrayList<>(slices);
        for (int s = 0; s < slices; s++) {
            final ChangelogDecoder decoder = decoders[s];
            final int from = (int) ((long) n * s / slices);
            final int to = (int) ((long) n * (s + 1) / slices);
            final SerializedUpdates part = new SerializedUpdates(to - from);
            parts[s] = part;
            work.add(threads.submit(() -> {
                decodeSlice(decoder, runs, from, to, part);
                return null;
            }));
        }
        started = new Decoding(runs, parts, work);
        return started;
    }

    /** One poll's records being decoded in slices. */
    final class Decoding {
        private final List<List<ConsumerRecord<byte[], byte[]>>> runs;
        private final SerializedUpdates[] parts;
        private final List<Future<?>> work;

        private Decoding(List<List<ConsumerRecord<byte[], byte[]>>> runs, SerializedUpdates[] parts,
                         List<Future<?>> work) {
            this.runs = runs;
            this.parts = parts;
            this.work = work;
        }

        /** The records, one list a partition, in poll order. */
        List<List<ConsumerRecord<byte[], byte[]>>> runs() {
            return runs;
        }

        /**
         * Waits for the slices and adds their updates to {@code batch} in record order; the slices' updates keep their
         * own buffers, which the batch references until it is applied. Throws the earliest slice's failure, as
         * decoding the records in order would.
         */
        void addTo(SerializedUpdates batch) throws Exception {
            started = null;
            Exception failure = null;
            for (Future<?> slice : work) {
                try {
                    slice.get();
                } catch (ExecutionException e) {
                    if (failure == null) {
                        failure = e.getCause() instanceof Exception cause ? cause : e;
                    }
                }
            }
            if (failure != null) {
                throw failure;
            }
            for (SerializedUpdates part : parts) {
                for (int i = 0; i < part.size(); i++) {
                    if (part.isDelete(i)) {
                        batch.delete(part.key(i));
                    } else {
                        batch.upsertView(part.key(i), part.bytes(i), part.offset(i), part.length(i));
                    }
                }
            }
        }
    }

    /** Decodes records {@code [from, to)} of the runs taken one after another. */
    private static void decodeSlice(ChangelogDecoder decoder, List<List<ConsumerRecord<byte[], byte[]>>> runs,
                                    int from, int to, SerializedUpdates into) throws Exception {
        int runStart = 0;
        for (List<ConsumerRecord<byte[], byte[]>> run : runs) {
            final int runEnd = runStart + run.size();
            for (int i = Math.max(from, runStart); i < Math.min(to, runEnd); i++) {
                final ConsumerRecord<byte[], byte[]> record = run.get(i - runStart);
                decoder.addKafkaRecord(record.partition(), record.offset(), record.key(), record.value(), into);
            }
            runStart = runEnd;
            if (runStart >= to) {
                return;
            }
        }
    }

    @Override
    public void close() {
        threads.shutdownNow();
    }
}
