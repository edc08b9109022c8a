package io.flix.flink.table.changelog;

import io.flix.flink.dimension.SerializedUpdates;
import io.flix.flink.table.snapshot.SnapshotRestore;
import io.flix.flink.table.spec.DimensionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The Kafka changelog: one consumer with every partition of the topic assigned (no consumer group, no committed
 * offsets), read from the earliest offset for as long as the dimension is open. Partitions added to the topic later
 * are not picked up.
 *
 * <p>Isolation {@code read_committed} by default: records of aborted transactions are never applied, and records
 * of a transaction still open are applied once it commits. The user may set {@code 'properties.isolation.level'}.
 * The bootstrap target is the end offsets when the consumer starts, as the consumer's isolation level sees them:
 * under {@code read_committed} the last stable offset (where a transaction still open begins), so the bootstrap
 * never waits for an open transaction.
 *
 * <p>Where 'snapshot.path' is set, the reader starts from the newest snapshot that serves ({@link SnapshotRestore}):
 * it loads its rows and reads each partition from the snapshot's offset (partitions it does not hold, from their
 * beginning), and after each batch it applies tells the dimension the offsets it has applied the topic up to.
 *
 * <p>Every broker call of the bootstrap (the topic's partitions, its end offsets, positions) is bounded by what is
 * left of 'lookup.bootstrap-timeout'; when it runs out, the error names the bootstrap servers, the topic and, where
 * the brokers did not answer, why (a connection attempt to each bootstrap server: refused, unknown host, ...).
 */
public final class KafkaChangelogReader extends ChangelogReader {

    private static final Logger LOG = LoggerFactory.getLogger(KafkaChangelogReader.class);

    /** Most bootstrap servers tried for the error message, and how long each connection attempt may take. */
    private static final int PROBED_SERVERS = 3;
    private static final int PROBE_TIMEOUT_MILLIS = 1_000;

    private volatile KafkaConsumer<byte[], byte[]> consumer;
    /** What the reader waits for, for {@link #progress()}. */
    private volatile String waitingFor;
    /** True until the brokers answered the bootstrap's metadata requests: the probe says why they did not. */
    private volatile boolean waitingForBrokers = true;
    private volatile long recordsRead;
    /** Most threads that decode a poll's records while the table bootstraps (1: the reader's alone). */
    private final int decodeThreads;
    /** Set once reading starts where decodeThreads > 1; kept after, for its decoders' skip counts. */
    private volatile SlicedDecoding sliced;
    private volatile long slicedPolls;

    /**
     * @param decodeThreads most threads that decode a poll's records while the table bootstraps; 0 for one a core of
     *                      this JVM (the table answers no lookup until it has bootstrapped)
     */
    public KafkaChangelogReader(DimensionSpec spec, ChangelogTarget dimension, int decodeThreads) {
        super(spec, dimension);
        if (decodeThreads < 0) {
            throw new IllegalArgumentException("decodeThreads must be >= 0 (0: one a core), was " + decodeThreads);
        }
        this.decodeThreads = decodeThreads == 0 ? Runtime.getRuntime().availableProcessors() : decodeThreads;
        waitingFor = "starting the consumer to ask the brokers for the partitions of topic '" + spec.topic() + "'";
    }

    /**
     * The properties of the consumer that reads {@code spec}'s topic: the user's ('properties.*') over this reader's
     * defaults, less what the reader does itself (it assigns partitions and keeps no offsets).
     */
    public static Properties consumerProperties(DimensionSpec spec) {
        final Properties properties = new Properties();
        properties.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        properties.put(ConsumerConfig.CLIENT_ID_CONFIG, "flix-changelog-" + spec.topic());
        properties.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        properties.putAll(spec.consumerProperties());
        // not the user's to change: this reader assigns partitions itself and keeps no offsets
        properties.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        properties.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        properties.remove(ConsumerConfig.GROUP_ID_CONFIG);
        return properties;
    }

    @Override
    void read(ChangelogDecoder decoder) throws Exception {
        final Properties properties = consumerProperties(spec);
        boolean bootstrapped = false;
        if (decodeThreads > 1) {
            sliced = new SlicedDecoding(decoder, decodeThreads, "flix-changelog-decode " + spec.topic());
        }
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(properties)) {
            consumer = c;
            final List<TopicPartition> partitions;
            final Map<TopicPartition, Long> endAtOpen;
            // per partition, the offset every record before which is applied: kept only where snapshots are on
            final Map<Integer, Long> applied = new HashMap<>();
            try {
                partitions = partitions(c);
                c.assign(partitions);
                waitForBrokers("the end offsets of topic '" + spec.topic() + "'");
                endAtOpen = c.endOffsets(partitions, dimension.bootstrapTimeLeft());
                if (dimension.snapshots() == null) {
                    c.seekToBeginning(partitions);
                } else {
                    applied.putAll(startFromSnapshot(c, partitions, endAtOpen));
                }
                waitingForBrokers = false;
                waitingFor = "reading the topic's " + partitions.size() + " partitions up to their end offsets at "
                        + "open";
            } catch (TimeoutException e) {
                throw bootstrapTimeout(e);
            }
            final Duration pollTimeout = Duration.ofMillis(spec.pollTimeoutMillis());
            SerializedUpdates batch = new SerializedUpdates(256);
            // while it bootstraps, the table answers no lookup: polls gather into batches of the batch size, which
            // the index applies at a lower cost per record than a poll's few hundred, on a thread of their own while
            // this one polls the next records and the decoding threads decode the poll before
            BackgroundApply background = new BackgroundApply(dimension, "flix-changelog-apply " + spec.topic());
            SlicedDecoding.Decoding decoding = null;
            try {
                while (running) {
                    if (!bootstrapped) {
                        try {
                            bootstrapped = caughtUp(c, endAtOpen);
                        } catch (TimeoutException e) {
                            throw bootstrapTimeout(e);
                        }
                        if (bootstrapped) {
                            if (decoding != null) {
                                batch = addDecoded(decoding, batch, applied, background);
                                decoding = null;
                            }
                            // what the last polls of the bootstrap gathered
                            batch = background.hand(batch, applied);
                            background.await();
                            background.close();
                            background = null;
                            dimension.bootstrapApplied();
                            waitingFor = "following the topic";
                        }
                    }
                    final ConsumerRecords<byte[], byte[]> records;
                    try {
                        records = c.poll(pollTimeout);
                    } catch (WakeupException | InterruptException e) {
                        if (!running) {
                            return;
                        }
                        throw e;
                    }
                    if (records.isEmpty()) {
                        continue;
                    }
                    if (decoding != null) { // the poll before's, decoded meanwhile; its decoders serve the next
                        batch = addDecoded(decoding, batch, applied, background);
                        decoding = null;
                    }
                    if (!bootstrapped && sliced != null && SlicedDecoding.worthSlicing(records.count())) {
                        final List<List<ConsumerRecord<byte[], byte[]>>> runs = new ArrayList<>();
                        for (TopicPartition partition : records.partitions()) { // the order iterating gives
                            runs.add(records.records(partition));
                        }
                        decoding = sliced.start(runs);
                        slicedPolls++;
                    } else {
                        for (ConsumerRecord<byte[], byte[]> record : records) {
                            decoder.addKafkaRecord(record.partition(), record.offset(), record.key(), record.value(),
                                    batch);
                            if (!applied.isEmpty()) {
                                applied.put(record.partition(), record.offset() + 1);
                            }
                            if (full(batch)) {
                                batch = applyOrHand(batch, applied, background);
                            }
                        }
                    }
                    if (bootstrapped) { // a poll's records go at once
                        batch = applyOrHand(batch, applied, null);
                    }
                    recordsRead += records.count();
                }
            } finally {
                if (background != null) {
                    background.close();
                }
            }
        } finally {
            consumer = null;
            if (sliced != null) {
                sliced.close();
            }
        }
    }

    /**
     * Adds a poll decoded in slices to the batch, which goes to be applied once it holds the batch size (during the
     * bootstrap, the only time polls are decoded in slices); returns the batch to fill next.
     */
    private SerializedUpdates addDecoded(SlicedDecoding.Decoding decoded, SerializedUpdates batch,
                                         Map<Integer, Long> applied, BackgroundApply background) throws Exception {
        decoded.addTo(batch);
        if (!applied.isEmpty()) {
            // a partition's offsets rise through a poll: its last record is enough
            for (List<ConsumerRecord<byte[], byte[]>> run : decoded.runs()) {
                if (!run.isEmpty()) {
                    final ConsumerRecord<byte[], byte[]> last = run.get(run.size() - 1);
                    applied.put(last.partition(), last.offset() + 1);
                }
            }
        }
        return full(batch) ? applyOrHand(batch, applied, background) : batch;
    }

    /** Polls of the bootstrap decoded on more than one thread. */
    public long slicedPolls() {
        return slicedPolls;
    }

    @Override
    long skippedBeyondDecoder() {
        final SlicedDecoding s = sliced;
        return s == null ? 0 : s.skippedByOthers();
    }

    /**
     * Applies a batch: handed to {@code background} during the bootstrap (the holder to fill next is returned), else
     * here, cleared after; then, where snapshots are on, the dimension is told how far the topic is.
     */
    private SerializedUpdates applyOrHand(SerializedUpdates batch, Map<Integer, Long> applied,
                                          BackgroundApply background) throws Exception {
        if (background != null) {
            return background.hand(batch, applied);
        }
        dimension.apply(batch);
        batch.clear();
        if (!applied.isEmpty()) {
            dimension.appliedThrough(applied);
        }
        return batch;
    }

    /**
     * Loads the newest snapshot that serves, seeks every partition to where the reader starts (the snapshot's offset,
     * or the partition's beginning), tells the dimension, and returns those offsets.
     */
    private Map<Integer, Long> startFromSnapshot(KafkaConsumer<byte[], byte[]> c, List<TopicPartition> partitions,
                                                 Map<TopicPartition, Long> endAtOpen) {
        waitForBrokers("the beginning offsets and the id of topic '" + spec.topic() + "'");
        final Map<TopicPartition, Long> beginning = c.beginningOffsets(partitions, dimension.bootstrapTimeLeft());
        final TopicFacts facts = topicFacts();
        final String topicId = facts.id();
        waitingForBrokers = false;
        final Map<Integer, Long> beginningOf = new HashMap<>();
        final Map<Integer, Long> endOf = new HashMap<>();
        beginning.forEach((p, offset) -> beginningOf.put(p.partition(), offset));
        endAtOpen.forEach((p, offset) -> endOf.put(p.partition(), offset));
        waitingFor = "loading a snapshot from " + dimension.snapshots().directory();
        final SnapshotRestore.Outcome outcome = SnapshotRestore.restore(dimension.snapshots().directory(), spec,
                new SnapshotRestore.TopicState(topicId, beginningOf, endOf, facts.deleteRetentionMs(),
                        facts.compactionUnknown(), System.currentTimeMillis()), dimension::loadSnapshot);
        final Map<Integer, Long> from = new HashMap<>(beginningOf);
        if (outcome.loaded() != null) {
            from.putAll(outcome.loaded().offsets());
            LOG.info("FliX dimension {}: loaded snapshot {} ({} keys); reading the topic from the offsets {}",
                    dimension.describe(), outcome.loaded().sequence(), outcome.loaded().keys(), from);
        } else {
            LOG.warn("FliX dimension {}: reading the whole topic, no snapshot loaded: {}", dimension.describe(),
                    outcome.wholeTopicReason());
        }
        for (TopicPartition partition : partitions) {
            c.seek(partition, from.get(partition.partition()));
        }
        dimension.readingFrom(topicId, from, outcome.wholeTopicReason());
        return from;
    }

    /** The topic's id and, where it is compacted, its delete.retention.ms (see {@link SnapshotRestore}). */
    private record TopicFacts(String id, Long deleteRetentionMs, String compactionUnknown) {
    }

    /**
     * The topic's id (it changes where a topic is deleted and created again under its name) and its cleanup
     * settings as the broker has them; settings that do not read (no DescribeConfigs permission) are said so.
     */
    private TopicFacts topicFacts() {
        final Properties properties = new Properties();
        spec.consumerProperties().forEach((k, v) -> {
            if (AdminClientConfig.configNames().contains(k)) {
                properties.put(k, v);
            }
        });
        properties.put(AdminClientConfig.CLIENT_ID_CONFIG, "flix-snapshot-" + spec.topic());
        try (Admin admin = Admin.create(properties)) {
            final long millis = Math.max(1, dimension.bootstrapTimeLeft().toMillis());
            final String id = admin.describeTopics(List.of(spec.topic())).topicNameValues().get(spec.topic())
                    .get(millis, TimeUnit.MILLISECONDS).topicId().toString();
            final ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, spec.topic());
            final Config config;
            try {
                config = admin.describeConfigs(List.of(resource)).values().get(resource)
                        .get(Math.max(1, dimension.bootstrapTimeLeft().toMillis()), TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                return new TopicFacts(id, null, String.valueOf(e.getCause()));
            }
            final ConfigEntry policy = config.get(TopicConfig.CLEANUP_POLICY_CONFIG);
            final ConfigEntry retention = config.get(TopicConfig.DELETE_RETENTION_MS_CONFIG);
            if (policy == null || policy.value() == null || retention == null || retention.value() == null) {
                return new TopicFacts(id, null, "the broker gave no " + TopicConfig.CLEANUP_POLICY_CONFIG + " or "
                        + TopicConfig.DELETE_RETENTION_MS_CONFIG);
            }
            final boolean compacted = List.of(policy.value().toLowerCase(Locale.ROOT).replace(" ", "").split(","))
                    .contains(TopicConfig.CLEANUP_POLICY_COMPACT);
            return new TopicFacts(id, compacted ? Long.parseLong(retention.value()) : null, null);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new TimeoutException("the id and settings of topic '" + spec.topic() + "'", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("the brokers did not give the id of topic '" + spec.topic() + "': "
                    + e.getCause(), e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptException(e);
        }
    }

    /**
     * How long the first broker call may wait for any broker to answer: the consumer's 'default.api.timeout.ms'
     * ('properties.default.api.timeout.ms', Kafka's default 60 s), so that a table whose brokers are all unreachable
     * fails in that time, not after 'lookup.bootstrap-timeout', which is sized for reading the topic.
     */
    public static Duration connectTimeout(Map<String, String> consumerProperties) {
        final Object configured = consumerProperties.get(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG);
        return Duration.ofMillis(configured == null
                ? (Integer) ConsumerConfig.configDef().defaultValues().get(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG)
                : Long.parseLong(configured.toString().trim()));
    }

    private List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> c) {
        waitForBrokers("the partitions of topic '" + spec.topic() + "'");
        final Duration connect = connectTimeout(spec.consumerProperties());
        final Duration left = dimension.bootstrapTimeLeft();
        final List<PartitionInfo> infos;
        try {
            infos = c.partitionsFor(spec.topic(), connect.compareTo(left) < 0 ? connect : left);
        } catch (TimeoutException e) {
            if (connect.compareTo(left) >= 0) {
                throw e; // the bootstrap's own deadline came first
            }
            final Progress progress = progress();
            final BrokersUnreachableException unreachable = new BrokersUnreachableException("no broker at bootstrap "
                    + "servers '" + spec.bootstrapServers() + "' answered for the partitions of topic '" + spec.topic()
                    + "' within 'properties." + ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG + "' (" + connect.toMillis()
                    + " ms): " + progress.description(), progress.cause());
            unreachable.addSuppressed(e);
            throw unreachable;
        }
        if (infos == null || infos.isEmpty()) {
            throw new IllegalStateException("topic '" + spec.topic() + "' (option 'topic') has no partitions or does "
                    + "not exist at bootstrap servers '" + spec.bootstrapServers() + "'");
        }
        final List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo info : infos) {
            partitions.add(new TopicPartition(info.topic(), info.partition()));
        }
        return partitions;
    }

    private void waitForBrokers(String what) {
        waitingFor = "waiting for the brokers to answer with " + what;
        waitingForBrokers = true;
    }

    private boolean caughtUp(KafkaConsumer<byte[], byte[]> c, Map<TopicPartition, Long> endAtOpen) {
        for (Map.Entry<TopicPartition, Long> end : endAtOpen.entrySet()) {
            if (c.position(end.getKey(), dimension.bootstrapTimeLeft()) < end.getValue()) {
                return false;
            }
        }
        return true;
    }

    /** No broker answered the bootstrap's first call within the connect timeout ({@link #connectTimeout}). */
    public static final class BrokersUnreachableException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        BrokersUnreachableException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The bootstrap's time ran out in a broker call: the dimension's timeout error, with the call's. */
    private Exception bootstrapTimeout(TimeoutException e) {
        final Exception timeout = dimension.bootstrapTimeout();
        timeout.addSuppressed(e);
        return timeout;
    }

    @Override
    public long recordsRead() {
        return recordsRead;
    }

    @Override
    public Progress progress() {
        final String doing = waitingFor + "; " + recordsRead + " records read";
        if (!waitingForBrokers) {
            return new Progress(doing, null);
        }
        final List<String> servers = new ArrayList<>();
        for (String server : String.valueOf(spec.bootstrapServers()).split(",")) {
            if (!server.isBlank()) {
                servers.add(server.trim());
            }
        }
        final StringBuilder found = new StringBuilder();
        IOException firstProblem = null;
        for (String server : servers.subList(0, Math.min(PROBED_SERVERS, servers.size()))) {
            final IOException problem = probe(server);
            found.append(found.length() == 0 ? "" : "; ").append(server).append(": ")
                    .append(problem == null ? "accepts connections, but no Kafka answer came (check the security "
                            + "settings, 'properties.security.protocol' and the like, and the broker's log)"
                            : problem.getMessage());
            if (firstProblem == null) {
                firstProblem = problem;
            }
        }
        return new Progress(doing + "; the bootstrap servers: " + found, firstProblem);
    }

    /** Tries to connect to one {@code host:port} (or {@code [v6 address]:port}): null where it connects. */
    private static IOException probe(String server) {
        final int colon = server.lastIndexOf(':');
        final String host = colon <= 0 ? "" : server.substring(0, colon).replace("[", "").replace("]", "");
        final int port;
        try {
            port = Integer.parseInt(server.substring(colon + 1));
        } catch (NumberFormatException e) {
            return new IOException("not a host:port address");
        }
        if (host.isEmpty() || port < 0 || port > 65_535) {
            return new IOException("not a host:port address");
        }
        final InetSocketAddress address = new InetSocketAddress(host, port);
        if (address.isUnresolved()) {
            return new IOException("unknown host '" + host + "'");
        }
        try (Socket socket = new Socket()) {
            socket.connect(address, PROBE_TIMEOUT_MILLIS);
            return null;
        } catch (IOException e) {
            final String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
            return new IOException("cannot connect to " + address + ": " + message.toLowerCase(Locale.ROOT), e);
        }
    }

    @Override
    public void stop() {
        super.stop();
        final KafkaConsumer<byte[], byte[]> c = consumer;
        if (c != null) {
            c.wakeup();
        }
    }
}
