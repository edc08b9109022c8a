package io.flix.flink.table;

import io.flix.flink.table.changelog.KafkaChangelogReader;
import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.flink.table.snapshot.SnapshotDirectory;
import io.flix.flink.table.snapshot.SnapshotManifest;
import io.flix.flink.table.snapshot.SnapshotWriter;
import io.flix.flink.table.spec.DimensionSpec;
import io.flix.flink.testing.KafkaBrokerExtension;
import io.flix.index.FlixIndex;

import org.apache.flink.core.testutils.ManuallyTriggeredScheduledExecutorService;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * A 'flix' table's bootstrap from its topic and from a snapshot, on an in-process Kafka broker, and what writing
 * the snapshot costs the lookups running beside it. One run, printed as it goes:
 * <ol>
 *   <li>writes {@code --keys} products (id, name, price; JSON) to a topic of {@code --partitions} partitions;</li>
 *   <li>opens the table with 'snapshot.path' on an empty directory: the bootstrap reads the whole topic;</li>
 *   <li>one thread sends lookup batches of 1,024 random keys, one after another, for {@code --baseline-seconds}
 *       without a snapshot being written, then while a snapshot is written: the batches' latencies, each way;</li>
 *   <li>for comparison, the time the whole dimension takes to copy under one hold of the shared lock (what a
 *       snapshot that exported everything at once would hold it for), to a stream that drops the bytes;</li>
 *   <li>closes the table; for comparison, reads the whole topic with one bare consumer configured as the table's
 *       reader configures its own (bytes only, nothing decoded or applied), then with one a partition, each on its
 *       own thread: what reading the records alone takes;</li>
 *   <li>writes {@code --suffix} more records (updates of random keys) and opens the table again: the bootstrap loads
 *       the snapshot and reads the suffix only.</li>
 * </ol>
 * Run from the test class path: {@code --keys N --partitions N --suffix N --baseline-seconds N --backend cpu|gpu
 * --decode-threads N --batch-size N} (the last two: the table's {@code changelog.decode-threads} and
 * {@code changelog.batch-size}; unset, their defaults).
 */
public final class SnapshotBootstrapBenchmark {

    private static final ResolvedSchema SCHEMA = new ResolvedSchema(List.of(
            Column.physical("id", DataTypes.BIGINT().notNull()),
            Column.physical("name", DataTypes.STRING()),
            Column.physical("price", DataTypes.DOUBLE())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());
    private static final int LOOKUP_BATCH = 1024;

    private SnapshotBootstrapBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        final long keys = option(args, "--keys", 10_000_000);
        final int partitions = (int) option(args, "--partitions", 4);
        final long suffix = option(args, "--suffix", 100_000);
        final long baselineSeconds = option(args, "--baseline-seconds", 5);
        final String backend = text(args, "--backend", "cpu");
        final String decodeThreads = text(args, "--decode-threads", null);
        final String batchSize = text(args, "--batch-size", null);
        final Path snapshots = Files.createTempDirectory("flix-snapshots");
        final KafkaBrokerExtension broker = new KafkaBrokerExtension();
        broker.beforeAll(null);
        try {
            broker.createTopics(Map.of("products", partitions));
            long start = System.nanoTime();
            write(broker, 0, keys, keys, 1);
            print("wrote %d products to %d partitions in %.1f s", keys, partitions, seconds(start));
            final Map<String, String> options = new HashMap<>();
            options.put("connector", "flix");
            options.put("topic", "products");
            options.put("properties.bootstrap.servers", broker.bootstrapServers());
            options.put("value.fields-include", "EXCEPT_KEY");
            options.put("index.backend", backend);
            options.put("lookup.bootstrap-timeout", "1 h");
            options.put("snapshot.path", snapshots.toUri().toString());
            options.put("snapshot.interval", "1 d");
            if (decodeThreads != null) {
                options.put("changelog.decode-threads", decodeThreads);
            }
            if (batchSize != null) {
                options.put("changelog.batch-size", batchSize);
            }

            final FlixAsyncLookupFunction fromTopic = open(options);
            final SharedDimension d = fromTopic.dimension();
            print("bootstrap from the topic: %d ms (open %.1f s), %d records read, %d keys, %s backend",
                    d.bootstrapMillis(), openSeconds, d.recordsRead(),
                    d.indexSize(), d.backendName());

            final Latencies baseline = lookupsWhile(d, keys, () -> Thread.sleep(baselineSeconds * 1000));
            final SnapshotManifest[] written = new SnapshotManifest[1];
            final Latencies duringWrite = lookupsWhile(d, keys, () -> written[0] = d.snapshots().write());
            final SnapshotWriter w = d.snapshots();
            print("snapshot written: %d keys, %d pages, %.1f MiB in %d ms; the shared lock held %.1f ms in all, at "
                            + "most %.2f ms at once", written[0].keys(), written[0].pages(),
                    written[0].dataBytes() / 1048576.0, w.lastWriteMillis(), w.lastTotalLockNanos() / 1e6,
                    w.lastPageLockNanos() / 1e6);
            print("lookup batches of %d, one thread, no snapshot:     %s", LOOKUP_BATCH, baseline);
            print("lookup batches of %d, one thread, while writing:   %s", LOOKUP_BATCH, duringWrite);

            final var whole = d.writePages(OutputStream.nullOutputStream(), (int) Math.min(Integer.MAX_VALUE - 8,
                    d.indexSize() + 1));
            print("for comparison, the whole dimension copied under one hold of the shared lock: %.0f ms (%d keys)",
                    whole.maxLockNanos() / 1e6, whole.keys());

            fromTopic.close();
            start = System.nanoTime();
            long read = bareRead(fromTopic.spec(), partitions, false);
            print("for comparison, the topic read by one bare consumer, nothing decoded: %d records in %.2f s", read,
                    seconds(start));
            start = System.nanoTime();
            read = bareRead(fromTopic.spec(), partitions, true);
            print("for comparison, the topic read by %d bare consumers, one a partition on its own thread: %d records "
                    + "in %.2f s", partitions, read, seconds(start));
            start = System.nanoTime();
            write(broker, 0, suffix, keys, 2);
            print("wrote %d updates of random keys in %.1f s", suffix, seconds(start));

            final FlixAsyncLookupFunction fromSnapshot = open(options);
            final SharedDimension restarted = fromSnapshot.dimension();
            print("bootstrap from the snapshot: %d ms (open %.1f s), %d keys from the snapshot, %d records read, %d "
                            + "keys", restarted.bootstrapMillis(), openSeconds, restarted.restoredKeys(),
                    restarted.recordsRead(), restarted.indexSize());
            fromSnapshot.close();
        } finally {
            broker.afterAll(null);
            try (var files = Files.walk(snapshots)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static double openSeconds;

    /**
     * Opens the table as a lookup subtask does; its snapshot schedule runs on an executor nobody triggers, so that
     * snapshots are written only when this run says.
     */
    private static FlixAsyncLookupFunction open(Map<String, String> options) throws Exception {
        final long start = System.nanoTime();
        final FlixAsyncLookupFunction function = TestTables.function(SCHEMA, options, new int[] {0});
        final SharedDimension held = SharedDimensions.acquire(function.spec(), FlixIndex::open,
                new SnapshotWriter.Hooks(new ManuallyTriggeredScheduledExecutorService(),
                        SnapshotDirectory.Streams.NONE));
        try {
            function.open(new FunctionContext(null));
        } finally {
            SharedDimensions.release(held); // the function holds it now
        }
        openSeconds = seconds(start);
        return function;
    }

    /** Writes {@code count} products: ids {@code from..} where {@code of} is 0, else random ids below {@code of}. */
    private static void write(KafkaBrokerExtension broker, long from, long count, long of, int version)
            throws Exception {
        final Properties properties = broker.clientProperties();
        properties.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        properties.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(1 << 20));
        properties.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        final LongAdder failed = new LongAdder();
        final SplittableRandom random = new SplittableRandom(version);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties)) {
            for (long i = 0; i < count; i++) {
                final long id = version == 1 ? from + i : random.nextLong(of);
                producer.send(new ProducerRecord<>("products", "{\"id\":" + id + "}", "{\"name\":\"product-" + id
                        + "-v" + version + "\",\"price\":" + (id % 10_000) / 100.0 + "}"), (m, e) -> {
                            if (e != null) {
                                failed.increment();
                            }
                        });
            }
            producer.flush();
        }
        if (failed.sum() > 0) {
            throw new IllegalStateException(failed.sum() + " records were not written to Kafka");
        }
    }

    /**
     * Reads the whole topic of {@code spec} with bare consumers configured as the table's reader configures its own
     * ({@link KafkaChangelogReader#consumerProperties}): one for every partition, or one a partition on its own
     * thread. Bytes only: nothing is decoded or applied.
     *
     * @return the records read
     */
    private static long bareRead(DimensionSpec spec, int partitions, boolean consumerPerPartition) throws Exception {
        final List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            all.add(new TopicPartition(spec.topic(), p));
        }
        final List<List<TopicPartition>> assignments = consumerPerPartition
                ? all.stream().map(List::of).toList() : List.of(all);
        final List<CompletableFuture<Long>> reads = new ArrayList<>();
        for (List<TopicPartition> assigned : assignments) {
            reads.add(CompletableFuture.supplyAsync(() -> readToEnd(spec, assigned),
                    runnable -> new Thread(runnable, "bare-consumer").start()));
        }
        long records = 0;
        for (CompletableFuture<Long> read : reads) {
            records += read.get();
        }
        return records;
    }

    private static long readToEnd(DimensionSpec spec, List<TopicPartition> assigned) {
        try (KafkaConsumer<byte[], byte[]> consumer =
                     new KafkaConsumer<>(KafkaChangelogReader.consumerProperties(spec))) {
            consumer.assign(assigned);
            consumer.seekToBeginning(assigned);
            final Map<TopicPartition, Long> end = consumer.endOffsets(assigned);
            long records = 0;
            while (assigned.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                records += consumer.poll(Duration.ofMillis(100)).count();
            }
            return records;
        }
    }

    /** Something a lookup thread runs beside. */
    @FunctionalInterface
    private interface Task {
        void run() throws Exception;
    }

    /** Latencies of lookup batches sent one after another by one thread while {@code task} runs on this one. */
    private static Latencies lookupsWhile(SharedDimension d, long keys, Task task) throws Exception {
        final AtomicBoolean stop = new AtomicBoolean();
        final CompletableFuture<long[]> latencies = CompletableFuture.supplyAsync(() -> {
            final SplittableRandom random = new SplittableRandom(42);
            long[] nanos = new long[1 << 16];
            int n = 0;
            while (!stop.get()) {
                final long[] batch = new long[LOOKUP_BATCH];
                @SuppressWarnings("unchecked")
                final CompletableFuture<Collection<RowData>>[] futures = new CompletableFuture[LOOKUP_BATCH];
                for (int i = 0; i < LOOKUP_BATCH; i++) {
                    batch[i] = random.nextLong(keys);
                    futures[i] = new CompletableFuture<>();
                }
                final long start = System.nanoTime();
                d.submit(new SharedDimension.LookupBatch(batch, futures, LOOKUP_BATCH, start, null));
                CompletableFuture.allOf(futures).join();
                if (n == nanos.length) {
                    nanos = Arrays.copyOf(nanos, n * 2);
                }
                nanos[n++] = System.nanoTime() - start;
            }
            return Arrays.copyOf(nanos, n);
        }, runnable -> new Thread(runnable, "lookups").start());
        final long start = System.nanoTime();
        try {
            task.run();
        } finally {
            stop.set(true);
        }
        return new Latencies(latencies.get(), seconds(start));
    }

    /** Batch latencies over a window. */
    private record Latencies(long[] nanos, double seconds) {
        @Override
        public String toString() {
            final long[] sorted = nanos.clone();
            Arrays.sort(sorted);
            return String.format(Locale.ROOT, "%d batches in %.1f s (%.2f M lookups/s), latency p50 %.2f ms, p99 "
                            + "%.2f ms, p99.9 %.2f ms, max %.2f ms", sorted.length, seconds,
                    sorted.length * (double) LOOKUP_BATCH / seconds / 1e6, at(sorted, 0.5), at(sorted, 0.99),
                    at(sorted, 0.999), sorted.length == 0 ? 0 : sorted[sorted.length - 1] / 1e6);
        }

        private static double at(long[] sorted, double q) {
            return sorted.length == 0 ? 0 : sorted[(int) Math.min(sorted.length - 1, q * sorted.length)] / 1e6;
        }
    }

    private static void print(String format, Object... args) {
        System.out.printf(Locale.ROOT, format + "%n", args);
    }

    private static double seconds(long startNanos) {
        return (System.nanoTime() - startNanos) / 1e9;
    }

    private static long option(String[] args, String name, long fallback) {
        final String value = text(args, name, null);
        return value == null ? fallback : Long.parseLong(value.replace("_", ""));
    }

    private static String text(String[] args, String name, String fallback) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        return fallback;
    }
}
