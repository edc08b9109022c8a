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
 * first slice is decoded on the calling thread.
 */
final class SlicedDecoding implements AutoCloseable {

    /** Fewest records of a slice: below this a thread costs more than it saves. */
    static final int MIN_RECORDS_PER_SLICE = 512;

    private final ChangelogDecoder[] decoders;
    private final ExecutorService threads;

    /**
     * @param decoder the reader's own decoder, for the first slice
     * @param slices  the most slices a poll is cut into (threads, the caller's among them)
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
        threads = Executors.newFixedThreadPool(slices - 1, runnable -> {
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

    /**
     * Decodes {@code records} and adds their updates to {@code batch} in record order; the slices' updates keep their
     * own buffers, which the batch references until it is applied.
     *
     * @return the slices the records were cut into (1: decoded on the calling thread alone)
     */
    int decode(List<ConsumerRecord<byte[], byte[]>> records, SerializedUpdates batch) throws Exception {
        final int n = records.size();
        final int slices = Math.min(decoders.length, n / MIN_RECORDS_PER_SLICE);
        if (slices < 2) {
            decodeSlice(decoders[0], records, 0, n, batch);
            return 1;
        }
        final SerializedUpdates[] parts = new SerializedUpdates[slices];
        final List<Future<?>> others = new ArrayList<>(slices - 1);
        for (int s = 1; s < slices; s++) {
            final int slice = s;
            final int from = (int) ((long) n * s / slices);
            final int to = (int) ((long) n * (s + 1) / slices);
            parts[s] = new SerializedUpdates(to - from);
            others.add(threads.submit(() -> {
                decodeSlice(decoders[slice], records, from, to, parts[slice]);
                return null;
            }));
        }
        Exception failure = null;
        parts[0] = new SerializedUpdates(n / slices);
        try {
            decodeSlice(decoders[0], records, 0, n / slices, parts[0]);
        } catch (Exception e) {
            failure = e;
        }
        for (Future<?> other : others) {
            try {
                other.get();
            } catch (ExecutionException e) {
                if (failure == null) {
                    failure = e.getCause() instanceof Exception cause ? cause : e;
                }
            }
        }
        if (failure != null) {
            throw failure; // the earliest slice's failure first, as the records' order would give it
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
        return slices;
    }

    private static void decodeSlice(ChangelogDecoder decoder, List<ConsumerRecord<byte[], byte[]>> records, int from,
                                    int to, SerializedUpdates into) throws Exception {
        for (int i = from; i < to; i++) {
            final ConsumerRecord<byte[], byte[]> record = records.get(i);
            decoder.addKafkaRecord(record.partition(), record.offset(), record.key(), record.value(), into);
        }
    }

    @Override
    public void close() {
        threads.shutdownNow();
    }
}
