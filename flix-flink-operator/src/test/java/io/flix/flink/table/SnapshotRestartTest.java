package io.flix.flink.table;

import io.flix.flink.state.KeyGroupSnapshotCodec;
import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.flink.table.snapshot.SnapshotDirectory;
import io.flix.flink.table.snapshot.SnapshotManifest;
import io.flix.flink.table.snapshot.SnapshotWriter;
import io.flix.flink.testing.Eventually;
import io.flix.flink.testing.KafkaBrokerExtension;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import org.apache.flink.core.memory.DataInputViewStreamWrapper;
import org.apache.flink.core.testutils.ManuallyTriggeredScheduledExecutorService;
import org.apache.flink.streaming.util.MockStreamingRuntimeContext;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.RowType;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Snapshots of a Kafka-fed table against a real in-process broker: a restart loads the newest complete snapshot and
 * reads only the records after its offsets (counted, not timed); a table killed mid-snapshot restarts from the
 * previous complete one; a snapshot written while the topic moves restarts exactly; snapshots that cannot serve are
 * refused or passed over for a read of the whole topic; one subtask's task manager writes them. Snapshots are written
 * when the test says ({@link SnapshotWriter#write()}, or the writer's schedule on a manually triggered executor).
 */
class SnapshotRestartTest {

    @RegisterExtension
    // a log cleaner that runs often, for the compacted topic's test; the other topics are not compacted
    static final KafkaBrokerExtension BROKER = new KafkaBrokerExtension(Map.of("log.cleaner.backoff.ms", "50"));

    private static final ResolvedSchema SCHEMA = new ResolvedSchema(List.of(
            Column.physical("id", DataTypes.BIGINT().notNull()),
            Column.physical("name", DataTypes.STRING()),
            Column.physical("price", DataTypes.DOUBLE())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());

    @TempDir
    Path dir;

    /** Tables a test opened and has not closed yet: closed after it, should it fail. */
    private final List<Table> open = new ArrayList<>();

    @AfterEach
    void closeTables() throws Exception {
        for (Table table : new ArrayList<>(open)) {
            table.close();
        }
    }

    private Map<String, String> options(String topic) {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("topic", topic);
        options.put("properties.bootstrap.servers", BROKER.bootstrapServers());
        options.put("value.fields-include", "EXCEPT_KEY");
        options.put("lookup.batch-size", "1");
        options.put("index.backend", "cpu");
        options.put("snapshot.path", dir.resolve("snapshots").toString());
        options.put("snapshot.interval", "1 h");
        return options;
    }

    /** A table as a lookup subtask (index 0) holds it; its snapshots are written when the test says. */
    private final class Table implements AutoCloseable {
        final FlixAsyncLookupFunction function;
        final SharedDimension dimension;
        final ManuallyTriggeredScheduledExecutorService snapshotThread =
                new ManuallyTriggeredScheduledExecutorService();

        Table(Map<String, String> options, SnapshotDirectory.Streams streams) throws Exception {
            this(options, streams, FlixIndex::open);
        }

        Table(Map<String, String> options, SnapshotDirectory.Streams streams,
              Function<FlixConfig, FlixIndex> openIndex) throws Exception {
            function = TestTables.function(SCHEMA, options, new int[] {0});
            dimension = SharedDimensions.acquire(function.spec(), openIndex,
                    new SnapshotWriter.Hooks(snapshotThread, streams));
            open.add(this);
            function.open(new FunctionContext(null));
            assertSame(dimension, function.dimension());
        }

        SnapshotWriter snapshots() {
            return dimension.snapshots();
        }

        SnapshotManifest snapshot() throws IOException {
            return snapshots().write();
        }

        @Override
        public void close() throws Exception {
            open.remove(this);
            try {
                function.close();
            } finally {
                SharedDimensions.release(dimension);
            }
        }
    }

    private Table open(Map<String, String> options) throws Exception {
        return new Table(options, SnapshotDirectory.Streams.NONE);
    }

    /** The topic's records as written, and what applying them one at a time to a sorted map gives. */
    private static final class Changelog implements AutoCloseable {
        final String topic;
        final int partitions;
        final KafkaProducer<String, String> producer;
        final TreeMap<Long, String> expected = new TreeMap<>();
        long records;

        Changelog(String topic, int partitions) throws Exception {
            this(topic, partitions, Map.of());
        }

        Changelog(String topic, int partitions, Map<String, String> topicSettings) throws Exception {
            this.topic = topic;
            this.partitions = partitions;
            BROKER.createTopics(Map.of(topic, partitions), topicSettings);
            final Properties properties = BROKER.clientProperties();
            properties.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            properties.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            properties.put(ProducerConfig.ACKS_CONFIG, "all");
            // see FlixLookupJoinITCase#producer: one request in flight keeps the order on a fresh topic
            properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
            properties.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
            this.producer = new KafkaProducer<>(properties);
        }

        /** Sets keys [from, to) to version {@code version}: name "p{id}v{version}", price id + version / 10. */
        Changelog upsert(long from, long to, int version) {
            for (long id = from; id < to; id++) {
                final String name = "p" + id + "v" + version;
                final double price = id + version / 10.0;
                send(id, "{\"name\":\"" + name + "\",\"price\":" + price + "}");
                expected.put(id, name + "," + price);
            }
            return this;
        }

        Changelog delete(long from, long to) {
            for (long id = from; id < to; id++) {
                send(id, null);
                expected.remove(id);
            }
            return this;
        }

        private void send(long id, String value) {
            producer.send(new ProducerRecord<>(topic, (int) (id % partitions), "{\"id\":" + id + "}", value));
            records++;
        }

        void flush() {
            producer.flush();
        }

        @Override
        public void close() {
            producer.close();
        }
    }

    /** Every key below {@code bound} answers as the changelog says: one lookup batch of all of them. */
    private static void assertHolds(SharedDimension dimension, Changelog changelog, long bound) throws Exception {
        final int n = (int) bound;
        final long[] keys = new long[n];
        @SuppressWarnings("unchecked")
        final CompletableFuture<Collection<RowData>>[] futures = new CompletableFuture[n];
        for (int i = 0; i < n; i++) {
            keys[i] = i;
            futures[i] = new CompletableFuture<>();
        }
        dimension.submit(new SharedDimension.LookupBatch(keys, futures, n, System.nanoTime(), null));
        int wrong = 0;
        final StringBuilder first = new StringBuilder();
        for (int i = 0; i < n; i++) {
            final Collection<RowData> rows = TestTables.answer(futures[i]);
            final String actual = rows.isEmpty() ? null
                    : rows.iterator().next().getString(1) + "," + rows.iterator().next().getDouble(2);
            final String want = changelog.expected.get((long) i);
            if (!Objects.equals(want, actual)) {
                if (wrong++ < 5) {
                    first.append(" key ").append(i).append(": expected ").append(want).append(", was ").append(actual);
                }
            }
        }
        assertEquals(0, wrong, wrong + " keys answer wrong:" + first);
        assertEquals(changelog.expected.size(), dimension.indexSize());
    }

    /**
     * Waits until the dimension has applied {@code records} changelog records since it opened and its reader has told
     * it the offsets after them: once bootstrapped, the reader counts a poll's records read only after it applied them
     * and passed on their offsets, which a snapshot takes (without them a snapshot right after finds nothing new).
     */
    private static void awaitApplied(SharedDimension dimension, long records) throws Exception {
        Eventually.await("the dimension applies " + records + " records and takes their offsets",
                () -> dimension.appliedRecords() >= records && dimension.recordsRead() >= records);
    }

    private static long sum(Map<Integer, Long> offsets) {
        return offsets.values().stream().mapToLong(Long::longValue).sum();
    }

    /**
     * A restart loads the snapshot and reads only the records after its offsets: the reader's count of records read
     * is the suffix's length, and every key answers as the whole topic says. A later restart from a snapshot taken
     * at the topic's end reads nothing; a write with nothing new since the last snapshot writes nothing.
     */
    @Test
    void aRestartReadsOnlyTheRecordsAfterTheSnapshotsOffsets() throws Exception {
        try (Changelog changelog = new Changelog("snapshot-restart", 2)) {
            changelog.upsert(0, 1_000, 1).flush();
            final SnapshotManifest first;
            try (Table table = open(options(changelog.topic))) {
                assertEquals(-1, table.dimension.restoredKeys());
                assertTrue(table.dimension.wholeTopicReason().contains("no complete snapshot"),
                        table.dimension.wholeTopicReason());
                assertEquals(1_000, table.dimension.recordsRead());
                first = table.snapshot();
                assertNotNull(first);
                assertEquals(1_000, first.keys());
                assertEquals(Map.of(0, 500L, 1, 500L), first.offsets());
                assertEquals(changelog.topic, first.topic());
            }

            changelog.upsert(0, 100, 2).delete(100, 150).upsert(1_000, 1_050, 1).flush();
            try (Table table = open(options(changelog.topic))) {
                assertNull(table.dimension.wholeTopicReason());
                assertEquals(1_000, table.dimension.restoredKeys());
                assertEquals(200, table.dimension.recordsRead(), "only the records after the snapshot's offsets");
                assertEquals(200, table.dimension.appliedRecords());
                assertHolds(table.dimension, changelog, 1_100);
                final SnapshotManifest second = table.snapshot();
                assertEquals(Map.of(0, 600L, 1, 600L), second.offsets());
                assertEquals(first.sequence() + 1, second.sequence());
                assertNull(table.snapshot(), "nothing new since the last snapshot: nothing written");
            }

            try (Table table = open(options(changelog.topic))) {
                assertEquals(0, table.dimension.recordsRead());
                assertHolds(table.dimension, changelog, 1_100);
                assertNull(table.snapshot(), "nothing new since the snapshot loaded: nothing written");
            }
        }
    }

    /**
     * A bootstrap whose polls are decoded in slices and whose batches are applied while the next gather: the offsets
     * the table reached are each partition's end, so the snapshot holds them and a restart reads only what came after.
     */
    @Test
    void aBootstrapDecodedInSlicesKeepsTheOffsetsItReached() throws Exception {
        try (Changelog changelog = new Changelog("snapshot-sliced", 2)) {
            changelog.upsert(0, 6_000, 1).flush();
            final Map<String, String> options = options(changelog.topic);
            options.put("changelog.decode-threads", "3");
            options.put("properties.max.poll.records", "1100");
            options.put("changelog.batch-size", "1000");
            try (Table table = open(options)) {
                assertTrue(table.dimension.slicedPolls() > 0, "polls of 1,100 records are decoded in slices");
                assertTrue(table.dimension.appliedBatches() >= 3, "6,000 records in batches of about 1,100: "
                        + table.dimension.appliedBatches());
                assertEquals(Map.of(0, 3_000L, 1, 3_000L), table.dimension.appliedOffsets());
                assertEquals(Map.of(0, 3_000L, 1, 3_000L), table.snapshot().offsets());
            }
            changelog.upsert(0, 10, 2).flush();
            try (Table table = open(options)) {
                assertEquals(6_000, table.dimension.restoredKeys());
                assertEquals(10, table.dimension.recordsRead(), "only the records after the snapshot's offsets");
                assertHolds(table.dimension, changelog, 6_000);
            }
        }
    }

    /**
     * A table killed mid-snapshot (its data file cut off after 4 KiB; then, on a second try, its manifest cut off
     * before it was published) and closed: the restart loads the previous complete snapshot, never the torn files,
     * applies the changelog after that snapshot's offsets, and answers every key as the whole topic says. The next
     * snapshots clean the torn files up and keep the newest two complete ones.
     */
    @Test
    void aTableKilledMidSnapshotRestartsFromThePreviousCompleteOne() throws Exception {
        final AtomicReference<SnapshotDirectory.Streams> failing =
                new AtomicReference<>(SnapshotDirectory.Streams.NONE);
        try (Changelog changelog = new Changelog("snapshot-killed", 2)) {
            changelog.upsert(0, 1_000, 1).flush();
            final Table killed = new Table(options(changelog.topic), (name, out) -> failing.get().wrap(name, out));
            final SnapshotManifest complete = killed.snapshot();
            assertEquals(1_000, complete.keys());

            changelog.upsert(0, 200, 2).delete(900, 1_000).flush();
            awaitApplied(killed.dimension, 1_300);
            failing.set((name, out) -> name.endsWith(SnapshotDirectory.DATA) ? new DyingOutputStream(out, 4_096) : out);
            final IOException dataDied = assertThrows(IOException.class, killed::snapshot);
            assertTrue(dataDied.getMessage().contains("simulated"), dataDied.getMessage());
            failing.set((name, out) -> name.endsWith(SnapshotDirectory.IN_PROGRESS) ? new DyingOutputStream(out, 10) : out);
            assertThrows(IOException.class, killed::snapshot);
            killed.close();

            final SnapshotDirectory directory = killed.snapshots().directory();
            final List<String> left = directory.fileNames();
            assertEquals(5, left.size(), "the complete snapshot's two files, a torn data file, a whole one and a torn "
                    + "in-progress manifest: " + left);
            assertEquals(List.of(complete), directory.published().stream()
                    .map(SnapshotDirectory.Published::manifest).toList());

            changelog.upsert(100, 300, 3).upsert(950, 960, 3).upsert(2_000, 2_010, 1).flush();
            try (Table restarted = open(options(changelog.topic))) {
                assertEquals(1_000, restarted.dimension.restoredKeys(), "the previous complete snapshot");
                assertEquals(300 + 220, restarted.dimension.recordsRead(), "the records after its offsets");
                assertHolds(restarted.dimension, changelog, 2_010);

                final SnapshotManifest next = restarted.snapshot();
                assertEquals(4, next.sequence(), "above the torn writes' sequence numbers");
                assertEquals(List.of(next, complete), directory.published().stream()
                        .map(SnapshotDirectory.Published::manifest).toList());
                assertEquals(4, directory.fileNames().size(), "the torn files are gone: " + directory.fileNames());

                changelog.upsert(5, 6, 4).flush();
                awaitApplied(restarted.dimension, 521);
                final SnapshotManifest last = restarted.snapshot();
                assertEquals(List.of(last, next), directory.published().stream()
                        .map(SnapshotDirectory.Published::manifest).toList());
                assertEquals(4, directory.fileNames().size(), "the newest two: " + directory.fileNames());
            }
        }
    }

    /**
     * A snapshot written while the topic moves: its first page is taken, then its writing waits until records
     * changing keys in its first, second and third pages (updates, deletes, new keys) are applied. The manifest holds
     * the offsets from before those records, the later pages hold their effect, and a restart (with more records
     * after) answers every key as the whole topic says, having read every record after the offsets.
     */
    @Test
    void aSnapshotWrittenWhileTheTopicMovesRestartsExactly() throws Exception {
        final int keys = 150_000;
        final CountDownLatch writing = new CountDownLatch(1);
        final CountDownLatch goOn = new CountDownLatch(1);
        final SnapshotDirectory.Streams holdsFirstWrite = (name, out) -> !name.endsWith(SnapshotDirectory.DATA) ? out
                : new FilterOutputStream(out) {
                    @Override
                    public void write(byte[] b, int off, int len) throws IOException {
                        writing.countDown();
                        try {
                            assertTrue(goOn.await(TestTables.NET_SECONDS, TimeUnit.SECONDS));
                        } catch (InterruptedException e) {
                            throw new IOException(e);
                        }
                        out.write(b, off, len);
                    }
                };
        try (Changelog changelog = new Changelog("snapshot-moving", 2)) {
            changelog.upsert(0, keys, 1).flush();
            final SnapshotManifest manifest;
            try (Table table = new Table(options(changelog.topic), holdsFirstWrite)) {
                final CompletableFuture<SnapshotManifest> written = CompletableFuture.supplyAsync(() -> {
                    try {
                        return table.snapshot();
                    } catch (IOException e) {
                        throw new IllegalStateException(e);
                    }
                });
                assertTrue(writing.await(TestTables.NET_SECONDS, TimeUnit.SECONDS), "the first page is written");
                changelog.upsert(0, 1_000, 2).upsert(70_000, 71_000, 2).delete(140_000, 141_000)
                        .upsert(keys, keys + 1_000, 1).flush();
                awaitApplied(table.dimension, keys + 4_000);
                goOn.countDown();
                manifest = written.get(TestTables.NET_SECONDS, TimeUnit.SECONDS);
            }
            assertEquals(keys, sum(manifest.offsets()), "the offsets from before the first page");
            assertTrue(manifest.pages() >= 3, "pages: " + manifest.pages());
            final Set<Long> inSnapshot = keysOf(manifest);
            assertTrue(inSnapshot.contains((long) keys + 500), "a key added while the write waited is in a later page");
            assertTrue(!inSnapshot.contains(140_500L), "a key deleted while the write waited is not");

            changelog.upsert(0, 10, 3).flush();
            try (Table restarted = open(options(changelog.topic))) {
                assertEquals(manifest.keys(), restarted.dimension.restoredKeys());
                assertEquals(4_010, restarted.dimension.recordsRead());
                assertHolds(restarted.dimension, changelog, keys + 1_000);
            }
        }
    }

    /** The keys of a snapshot's data file. */
    private Set<Long> keysOf(SnapshotManifest manifest) throws Exception {
        final SnapshotDirectory directory = new SnapshotDirectory(dir.resolve("snapshots").toString(),
                SnapshotDirectory.Streams.NONE);
        final KeyGroupSnapshotCodec.Reader<RowData> reader = new KeyGroupSnapshotCodec.Reader<>(
                new RowDataSerializer((RowType)
                        SCHEMA.toPhysicalRowDataType().getLogicalType()), getClass().getClassLoader(), 1024);
        directory.read(manifest, in -> {
            final DataInputViewStreamWrapper view = new DataInputViewStreamWrapper(in);
            for (int page = 0; page < manifest.pages(); page++) {
                reader.readKeyGroup(page, view);
            }
        });
        final Set<Long> keys = new HashSet<>();
        for (int i = 0; i < reader.count(); i++) {
            keys.add(reader.keys()[i]);
        }
        return keys;
    }

    /**
     * A directory whose newest snapshot is of another topic belongs to another table: a table on this topic refuses
     * to open (the error names both topics and the option), and one that opened before refuses to write there.
     */
    @Test
    void aSnapshotOfAnotherTopicIsRefused() throws Exception {
        try (Changelog a = new Changelog("snapshot-topic-a", 1); Changelog b = new Changelog("snapshot-topic-b", 1)) {
            a.upsert(0, 10, 1).flush();
            b.upsert(0, 10, 1).flush();
            try (Table early = open(options(b.topic))) {
                try (Table other = open(options(a.topic))) {
                    assertNotNull(other.snapshot());
                }
                final List<String> before = early.snapshots().directory().fileNames();
                final IllegalStateException refused = assertThrows(IllegalStateException.class, early::snapshot);
                assertTrue(refused.getMessage().contains("'snapshot-topic-a'")
                        && refused.getMessage().contains("'snapshot-topic-b'"), refused.getMessage());
                assertEquals(before, early.snapshots().directory().fileNames(), "nothing written, nothing deleted");
            }

            final FlixAsyncLookupFunction function = TestTables.function(SCHEMA, options(b.topic), new int[] {0});
            final Exception e = assertThrows(Exception.class, () -> function.open(new FunctionContext(null)));
            final String message = e.getMessage();
            assertTrue(message.contains("'snapshot-topic-a'") && message.contains("'snapshot-topic-b'")
                    && message.contains("'snapshot.path'"), message);
            assertTrue(SharedDimensions.openOn(b.topic).isEmpty());
        }
    }

    /**
     * A snapshot written under another definition of the table (here a value format option that decides which
     * records are skipped) is not loaded: the whole topic is read, and the reason names the definitions. Options
     * that do not change the rows (the lookup batch size) keep the snapshot.
     */
    @Test
    void aSnapshotOfAnotherDefinitionIsPassedOverForTheWholeTopic() throws Exception {
        try (Changelog changelog = new Changelog("snapshot-definition", 2)) {
            changelog.upsert(0, 100, 1).flush();
            try (Table table = open(options(changelog.topic))) {
                assertNotNull(table.snapshot());
            }
            final Map<String, String> lenient = options(changelog.topic);
            lenient.put("value.json.ignore-parse-errors", "true");
            try (Table table = open(lenient)) {
                assertEquals(-1, table.dimension.restoredKeys());
                assertEquals(100, table.dimension.recordsRead());
                final String reason = table.dimension.wholeTopicReason();
                assertTrue(reason.contains("another definition") && reason.contains("value.json.ignore-parse-errors"),
                        reason);
                assertHolds(table.dimension, changelog, 100);
            }
            final Map<String, String> batched = options(changelog.topic);
            batched.put("lookup.batch-size", "2");
            try (Table table = open(batched)) {
                assertEquals(100, table.dimension.restoredKeys(), "the lookup batch size does not change the rows");
                assertEquals(0, table.dimension.recordsRead());
            }
        }
    }

    /**
     * Retention deleted records after a snapshot's offset in one partition (its log start offset passed it): the
     * snapshot cannot give what the topic holds, so the whole topic is read, as a table without snapshots would.
     */
    @Test
    void aSnapshotWhoseOffsetsRetentionDeletedIsPassedOverForTheWholeTopic() throws Exception {
        try (Changelog changelog = new Changelog("snapshot-retention", 2)) {
            changelog.upsert(0, 100, 1).flush();
            try (Table table = open(options(changelog.topic))) {
                assertEquals(Map.of(0, 50L, 1, 50L), table.snapshot().offsets());
            }
            changelog.upsert(100, 200, 1).flush();
            try (Admin admin = Admin.create(BROKER.clientProperties())) {
                admin.deleteRecords(Map.of(new TopicPartition(changelog.topic, 0), RecordsToDelete.beforeOffset(80)))
                        .all().get(TestTables.NET_SECONDS, TimeUnit.SECONDS);
            }
            try (Table table = open(options(changelog.topic))) {
                assertEquals(-1, table.dimension.restoredKeys());
                final String reason = table.dimension.wholeTopicReason();
                assertTrue(reason.contains("offset 50 of partition 0") && reason.contains("log start offset 80")
                        && reason.contains("retention"), reason);
                assertEquals(20 + 100, table.dimension.recordsRead(), "what the topic still holds");
                assertEquals(120, table.dimension.indexSize());
            }
        }
    }

    /** Keys of every record (tombstones included) the topic holds now, read from its beginning to its end. */
    private static Set<Long> keysInTopic(String topic) {
        final Properties properties = BROKER.clientProperties();
        properties.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        properties.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        final Set<Long> keys = new HashSet<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(properties)) {
            final TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            final long end = consumer.endOffsets(List.of(partition)).get(partition);
            while (consumer.position(partition) < end) {
                for (ConsumerRecord<String, String> record : consumer.poll(java.time.Duration.ofMillis(100))) {
                    keys.add(Long.parseLong(record.key().replaceAll("[^0-9]", "")));
                }
            }
        }
        return keys;
    }

    /**
     * A compacted topic: keys 0-49 written, a snapshot taken, keys 0-9 deleted; the log cleaner then removes the
     * deleted records and, past delete.retention.ms, their tombstones (waited for by reading the topic, not by time).
     * A restart passes the snapshot over, saying why, and reads the topic: keys 0-9 answer none, as without
     * snapshots. (Its age is past delete.retention.ms for sure: the tombstones it would miss are gone.)
     */
    @Test
    void aSnapshotOlderThanACompactedTopicsDeleteRetentionIsPassedOverForTheWholeTopic() throws Exception {
        final Map<String, String> fastCleaner = Map.of("cleanup.policy", "compact", "delete.retention.ms", "500",
                "segment.ms", "20", "min.cleanable.dirty.ratio", "0.01", "min.compaction.lag.ms", "0");
        try (Changelog changelog = new Changelog("snapshot-compacted", 1, fastCleaner)) {
            changelog.upsert(0, 50, 1).flush();
            try (Table table = open(options(changelog.topic))) {
                assertEquals(Map.of(0, 50L), table.snapshot().offsets());
            }
            changelog.delete(0, 10).flush();
            final int[] version = {2};
            Eventually.await("the log cleaner removes keys 0-9 and their tombstones from the topic", () -> {
                // a record more rolls the active segment (segment.ms), which the cleaner never cleans
                changelog.upsert(1_000, 1_001, version[0]++).flush();
                final Set<Long> keys = keysInTopic(changelog.topic);
                for (long k = 0; k < 10; k++) {
                    if (keys.contains(k)) {
                        Thread.sleep(50); // not a timing assertion: only spares the broker a busy loop
                        return false;
                    }
                }
                return true;
            });
            try (Table table = open(options(changelog.topic))) {
                for (long k = 0; k < 10; k++) {
                    assertNull(changelog.expected.get(k));
                }
                assertHolds(table.dimension, changelog, 1_001); // keys 0-9 answer none
                assertEquals(-1, table.dimension.restoredKeys(), "the snapshot is not loaded");
                final String reason = table.dimension.wholeTopicReason();
                assertTrue(reason != null && reason.contains("compacted") && reason.contains("delete.retention.ms 500"),
                        reason);
            }
        }
    }

    /**
     * The topic was deleted and created again under its name, with as many records as before: the offsets look
     * fine, but the topic id differs, so the snapshot is passed over and the new topic read whole.
     */
    @Test
    void aSnapshotOfARecreatedTopicIsPassedOverForTheWholeTopic() throws Exception {
        final String topic = "snapshot-recreated";
        try (Changelog before = new Changelog(topic, 1)) {
            before.upsert(0, 10, 1).flush();
            try (Table table = open(options(topic))) {
                assertNotNull(table.snapshot());
            }
        }
        try (Admin admin = Admin.create(BROKER.clientProperties())) {
            admin.deleteTopics(List.of(topic)).all().get(TestTables.NET_SECONDS, TimeUnit.SECONDS);
            Eventually.await("the topic is gone", () -> !admin.listTopics().names().get().contains(topic));
        }
        final AtomicReference<Changelog> recreated = new AtomicReference<>();
        Eventually.await("the topic is created again", () -> {
            try {
                recreated.set(new Changelog(topic, 1));
                return true;
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TopicExistsException) {
                    return false; // its deletion is still going on
                }
                throw e;
            }
        });
        try (Changelog after = recreated.get()) {
            after.upsert(100, 120, 1).flush();
            try (Table table = open(options(topic))) {
                assertEquals(-1, table.dimension.restoredKeys());
                final String reason = table.dimension.wholeTopicReason();
                assertTrue(reason.contains("deleted and created again"), reason);
                assertEquals(20, table.dimension.recordsRead());
                assertHolds(table.dimension, after, 120);
            }
        }
    }

    /**
     * The newest snapshot's data file was damaged (a byte changed, same length): it is passed over for the one
     * before it, and the records after that one's offsets are read.
     */
    @Test
    void aDamagedNewestSnapshotFallsBackToTheOneBefore() throws Exception {
        try (Changelog changelog = new Changelog("snapshot-damaged", 2)) {
            changelog.upsert(0, 100, 1).flush();
            final SnapshotManifest newest;
            try (Table table = open(options(changelog.topic))) {
                assertNotNull(table.snapshot());
                changelog.upsert(0, 10, 2).flush();
                awaitApplied(table.dimension, 110);
                newest = table.snapshot();
            }
            final Path data = dir.resolve("snapshots").resolve(newest.dataFile());
            final byte[] bytes = Files.readAllBytes(data);
            bytes[bytes.length / 2] ^= 1;
            Files.write(data, bytes);
            changelog.upsert(50, 55, 2).flush();
            try (Table table = open(options(changelog.topic))) {
                assertEquals(100, table.dimension.restoredKeys(), "the snapshot before the damaged one");
                assertEquals(15, table.dimension.recordsRead());
                assertHolds(table.dimension, changelog, 100);
            }
        }
    }

    /**
     * The index fails to build from the only snapshot's rows: the table is emptied again and reads the whole topic,
     * as where there is no snapshot, rather than failing.
     */
    @Test
    void aSnapshotTheIndexFailsToLoadGivesWayToTheWholeTopic() throws Exception {
        try (Changelog changelog = new Changelog("snapshot-unbuildable", 2)) {
            changelog.upsert(0, 100, 1).flush();
            try (Table table = open(options(changelog.topic))) {
                assertNotNull(table.snapshot());
            }
            changelog.upsert(0, 10, 2).flush();
            final AtomicBoolean failed = new AtomicBoolean();
            final HookedIndex.Hook firstBuildFails = method -> {
                if (method.equals("build") && failed.compareAndSet(false, true)) {
                    throw new IllegalStateException("the index could not build (simulated)");
                }
            };
            try (Table table = new Table(options(changelog.topic), SnapshotDirectory.Streams.NONE,
                    config -> HookedIndex.wrap(FlixIndex.open(config), firstBuildFails))) {
                assertTrue(failed.get());
                assertEquals(-1, table.dimension.restoredKeys());
                final String reason = table.dimension.wholeTopicReason();
                assertTrue(reason.contains("no complete snapshot loads") && reason.contains("simulated"), reason);
                assertEquals(110, table.dimension.recordsRead());
                assertHolds(table.dimension, changelog, 100);
            }
        }
    }

    /**
     * Only a task manager running subtask 0 of a lookup join writes: a table held by subtask 1 alone writes nothing,
     * even on its schedule; once subtask 0 holds it too, the schedule writes. After a bootstrap that read the whole
     * topic the first write is due at once; after one from a snapshot, an interval later.
     */
    @Test
    void theTaskManagerOfTheFirstSubtaskWritesOnItsSchedule() throws Exception {
        try (Changelog changelog = new Changelog("snapshot-role", 2)) {
            changelog.upsert(0, 10, 1).flush();
            final FlixAsyncLookupFunction second = TestTables.function(SCHEMA, options(changelog.topic),
                    new int[] {0});
            final ManuallyTriggeredScheduledExecutorService schedule = new ManuallyTriggeredScheduledExecutorService();
            final SharedDimension dimension = SharedDimensions.acquire(second.spec(), FlixIndex::open,
                    new SnapshotWriter.Hooks(schedule, SnapshotDirectory.Streams.NONE));
            try {
                second.open(new FunctionContext(new MockStreamingRuntimeContext(2, 1)));
                assertEquals(List.of(0L), schedule.getActivePeriodicScheduledTask().stream()
                        .map(task -> task.getDelay(TimeUnit.MILLISECONDS)).toList(), "due at once after a full read");
                schedule.triggerPeriodicScheduledTasks();
                assertNull(dimension.snapshots().write());
                assertEquals(0, dimension.snapshots().written());
                assertTrue(dimension.snapshots().directory().fileNames().isEmpty());

                final FlixAsyncLookupFunction first = TestTables.function(SCHEMA, options(changelog.topic),
                        new int[] {0});
                first.open(new FunctionContext(new MockStreamingRuntimeContext(2, 0)));
                try {
                    schedule.triggerPeriodicScheduledTasks();
                    assertEquals(1, dimension.snapshots().written());
                    assertEquals(0, dimension.snapshots().failures());
                } finally {
                    first.close();
                }
                changelog.upsert(0, 1, 2).flush();
                awaitApplied(dimension, 11);
                schedule.triggerPeriodicScheduledTasks();
                assertEquals(1, dimension.snapshots().written(), "subtask 0 closed: this task manager stopped");
            } finally {
                second.close();
                SharedDimensions.release(dimension);
            }

            try (Table table = open(options(changelog.topic))) {
                assertEquals(10, table.dimension.restoredKeys());
                final List<ScheduledFuture<?>> due =
                        new ArrayList<>(table.snapshotThread.getActivePeriodicScheduledTask());
                assertEquals(1, due.size());
                assertEquals(TimeUnit.HOURS.toMillis(1), due.get(0).getDelay(TimeUnit.MILLISECONDS),
                        "after a start from a snapshot, the first write is an interval away");
            }
        }
    }
}
