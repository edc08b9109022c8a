package io.flix.flink.table;

import io.flix.flink.table.changelog.KafkaChangelogReader;
import io.flix.flink.table.dimension.SharedDimension;
import io.flix.flink.table.dimension.SharedDimensions;
import io.flix.flink.table.lookup.FlixAsyncLookupFunction;
import io.flix.flink.testing.Eventually;
import io.flix.flink.testing.KafkaBrokerExtension;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.net.ServerSocket;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Kafka changelog on its own (lookup functions, no job) against a real in-process broker: the bootstrap, the
 * records it applies and skips, transactions, and the errors of a table whose brokers cannot be reached.
 */
class KafkaChangelogTest {

    @RegisterExtension
    static final KafkaBrokerExtension BROKER = new KafkaBrokerExtension();

    private static final ResolvedSchema SCHEMA = new ResolvedSchema(List.of(
            Column.physical("id", DataTypes.BIGINT().notNull()),
            Column.physical("name", DataTypes.STRING()),
            Column.physical("price", DataTypes.DOUBLE())),
            List.of(), UniqueConstraint.primaryKey("pk", List.of("id")), List.of());

    private static Map<String, String> options(String topic) {
        final Map<String, String> options = new HashMap<>();
        options.put("connector", "flix");
        options.put("topic", topic);
        options.put("properties.bootstrap.servers", BROKER.bootstrapServers());
        options.put("value.fields-include", "EXCEPT_KEY");
        options.put("lookup.batch-size", "1"); // every lookup is sent at once: no linger involved
        options.put("index.backend", "cpu");
        return options;
    }

    private static FlixAsyncLookupFunction open(Map<String, String> options) throws Exception {
        final FlixAsyncLookupFunction function = TestTables.function(SCHEMA, options, new int[] {0});
        function.open(new FunctionContext(null));
        return function;
    }

    private static String lookup(FlixAsyncLookupFunction function, long key) throws Exception {
        final Collection<RowData> rows = TestTables.answer(function.asyncLookup(GenericRowData.of(key)));
        if (rows.isEmpty()) {
            return "none";
        }
        final RowData row = rows.iterator().next();
        assertEquals(key, row.getLong(0));
        return row.getString(1) + "," + row.getDouble(2);
    }

    private static void awaitApplied(SharedDimension dimension, long records) throws Exception {
        Eventually.await("the dimension applies " + records + " records", () -> dimension.appliedRecords() >= records);
    }

    /**
     * Waits until each partition's last stable offset is the given one, or its end offset where that is -1 (no
     * transaction open there): what a read_committed consumer starting now takes as the end.
     */
    private static void awaitLastStableOffsets(String topic, Map<Integer, Long> expected) throws Exception {
        try (Admin admin = Admin.create(BROKER.clientProperties())) {
            final Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            expected.keySet().forEach(p -> latest.put(new TopicPartition(topic, p), OffsetSpec.latest()));
            Eventually.await("the transactions of " + topic + " settle", () -> {
                try {
                    final var stable = admin.listOffsets(latest,
                            new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all().get();
                    final var end = admin.listOffsets(latest,
                            new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all().get();
                    for (Map.Entry<Integer, Long> e : expected.entrySet()) {
                        final TopicPartition partition = new TopicPartition(topic, e.getKey());
                        final long want = e.getValue() < 0 ? end.get(partition).offset() : e.getValue();
                        if (stable.get(partition).offset() != want) {
                            return false;
                        }
                    }
                    return true;
                } catch (Exception ex) {
                    throw new IllegalStateException(ex);
                }
            });
        }
    }

    private static ProducerRecord<String, String> record(String topic, long id, String name, double price) {
        return new ProducerRecord<>(topic, (int) (id % 2), "{\"id\":" + id + "}",
                name == null ? null : "{\"name\":\"" + name + "\",\"price\":" + price + "}");
    }

    private static KafkaProducer<String, String> producer(String transactionalId) {
        final Properties properties = BROKER.clientProperties();
        properties.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        properties.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        if (transactionalId != null) {
            properties.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        } else {
            properties.put(ProducerConfig.ACKS_CONFIG, "all");
            // see FlixLookupJoinITCase#producer: one request in flight keeps the order on a fresh topic
            properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
            properties.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        }
        return new KafkaProducer<>(properties);
    }

    /**
     * Everything written before the open is visible to the first lookup (the value without the key column;
     * records without a key and values that do not parse are skipped and counted), and later changes arrive while
     * the table is open.
     */
    @Test
    void bootstrapsBeforeTheFirstLookupAndFollowsTheTopic() throws Exception {
        final String topic = "products-direct";
        BROKER.createTopics(Map.of(topic, 3));
        final int products = 2_000;
        try (KafkaProducer<String, String> producer = producer(null)) {
            for (long id = 0; id < products; id++) {
                producer.send(new ProducerRecord<>(topic, "{\"id\":" + id + "}",
                        "{\"name\":\"p" + id + "\",\"price\":" + id + ".5}"));
            }
            producer.send(new ProducerRecord<>(topic, null, "{\"name\":\"keyless\",\"price\":1.0}"));
            producer.send(new ProducerRecord<>(topic, "{\"id\":1}", "not json"));
            producer.send(new ProducerRecord<>(topic, "{\"id\":2}", null));
            producer.flush();

            final Map<String, String> options = options(topic);
            options.put("value.json.ignore-parse-errors", "true");
            options.put("changelog.batch-size", "256");
            final FlixAsyncLookupFunction function = open(options);
            try {
                final SharedDimension dimension = function.dimension();
                // all of it, before any lookup: the open waited for the end offsets
                assertEquals(products - 1, dimension.indexSize());
                assertEquals(2, dimension.skippedRecords());
                assertEquals("p1,1.5", lookup(function, 1));
                assertEquals("none", lookup(function, 2));
                assertEquals("p1999,1999.5", lookup(function, 1999));
                assertEquals("none", lookup(function, products));

                producer.send(new ProducerRecord<>(topic, "{\"id\":1}", null));
                producer.send(new ProducerRecord<>(topic, "{\"id\":2}", "{\"name\":\"back\",\"price\":2.0}"));
                producer.send(new ProducerRecord<>(topic, "{\"id\":" + products + "}",
                        "{\"name\":\"new\",\"price\":3.0}"));
                producer.flush();
                awaitApplied(dimension, products + 1 + 3);
                assertEquals("none", lookup(function, 1));
                assertEquals("back,2.0", lookup(function, 2));
                assertEquals("new,3.0", lookup(function, products));
                assertEquals(products, dimension.indexSize());
            } finally {
                function.close();
            }
            assertTrue(SharedDimensions.openOn(topic).isEmpty());
        }
    }

    /**
     * While the table bootstraps no lookup is answered, so the polls' records gather into batches of
     * 'changelog.batch-size' instead of one small batch a poll; once bootstrapped, a poll's records are applied at once.
     */
    @Test
    void theBootstrapGathersPollsIntoFullBatches() throws Exception {
        final String topic = "products-gathered";
        BROKER.createTopics(Map.of(topic, 2));
        final int products = 2_000;
        try (KafkaProducer<String, String> producer = producer(null)) {
            for (long id = 0; id < products; id++) {
                producer.send(record(topic, id, "p" + id, id));
            }
            producer.flush();
            final Map<String, String> options = options(topic);
            options.put("properties.max.poll.records", "50");
            options.put("changelog.batch-size", "500");
            final FlixAsyncLookupFunction function = open(options);
            try {
                final SharedDimension dimension = function.dimension();
                assertEquals(products, dimension.indexSize());
                assertEquals(4, dimension.appliedBatches(), "2,000 records in batches of 500, not 40 polls of 50");
                assertEquals("p1999,1999.0", lookup(function, 1999));

                producer.send(record(topic, 5, "five", 5.5));
                producer.flush();
                awaitApplied(dimension, products + 1);
                assertEquals(5, dimension.appliedBatches(), "after the bootstrap a poll's record goes at once");
                assertEquals("five,5.5", lookup(function, 5));
            } finally {
                function.close();
            }
        }
    }

    /**
     * The bootstrap's large polls are decoded in slices on several threads ('changelog.decode-threads', by default
     * one a core); the table then holds what decoding every record in order gives: three rounds over the same keys,
     * with deletes and values the format cannot parse in between, and the records each slice's decoder skipped
     * counted. With small polls and batches, each poll is decoded while the next is polled and each batch applied
     * while the next gathers: the rounds' records then span many batches.
     */
    @ParameterizedTest(name = "decode threads: {0}, polls of {1}, batches of {2}")
    @CsvSource({"3, default, default", "default, default, default", "3, 1100, 1000"})
    void theBootstrapDecodesLargePollsInSlicesAndKeepsRecordOrder(String decodeThreads, String pollRecords,
                                                                  String batchSize) throws Exception {
        final String topic = "products-sliced-" + decodeThreads + "-" + pollRecords;
        BROKER.createTopics(Map.of(topic, 2));
        final int products = 3_000;
        final Map<Long, String> expected = new HashMap<>();
        long unparsable = 0;
        try (KafkaProducer<String, String> producer = producer(null)) {
            for (int round = 0; round < 3; round++) {
                for (long id = 0; id < products; id++) {
                    if (round == 1 && id % 5 == 0) {
                        producer.send(record(topic, id, null, 0));
                        expected.remove(id);
                    } else if (round == 2 && id % 7 == 0) {
                        producer.send(new ProducerRecord<>(topic, (int) (id % 2), "{\"id\":" + id + "}", "not json"));
                        unparsable++;
                    } else if (round < 2 || id % 2 == 1) {
                        producer.send(record(topic, id, "r" + round + "p" + id, id + round));
                        expected.put(id, "r" + round + "p" + id + "," + (double) (id + round));
                    }
                }
            }
            producer.flush();
        }
        final Map<String, String> options = options(topic);
        options.put("value.json.ignore-parse-errors", "true");
        if (!decodeThreads.equals("default")) {
            options.put("changelog.decode-threads", decodeThreads);
        }
        if (!pollRecords.equals("default")) {
            options.put("properties.max.poll.records", pollRecords);
            options.put("changelog.batch-size", batchSize);
        }
        final boolean severalThreads = !decodeThreads.equals("default")
                || Runtime.getRuntime().availableProcessors() > 1;
        final FlixAsyncLookupFunction function = open(options);
        try {
            final SharedDimension dimension = function.dimension();
            assertEquals(severalThreads, dimension.slicedPolls() > 0, "the records were there before the table "
                    + "opened: the bootstrap's polls hold thousands, decoded in slices where several threads decode");
            assertEquals(unparsable, dimension.skippedRecords());
            if (!batchSize.equals("default")) {
                assertTrue(dimension.appliedBatches() >= 4, "7,286 updates, a batch at most 999 and one poll of "
                        + "1,100; were " + dimension.appliedBatches() + " batches");
            }
            assertEquals(expected.size(), dimension.indexSize());
            for (long id = 0; id < products; id++) {
                assertEquals(expected.getOrDefault(id, "none"), lookup(function, id), "product " + id);
            }
        } finally {
            function.close();
        }
    }

    /**
     * Committed, aborted and (at open) still open transactions on a topic of two partitions: lookups never see an
     * aborted row; the open transaction holds neither the bootstrap nor its rows in it, and what was committed
     * behind it in its partition is applied once it ends. {@code 'properties.isolation.level'} may still choose
     * read_uncommitted.
     */
    @Test
    void abortedTransactionsAreNeverAppliedAndAnOpenOneDoesNotHoldTheBootstrap() throws Exception {
        final String topic = "products-transactional";
        BROKER.createTopics(Map.of(topic, 2));
        try (KafkaProducer<String, String> committer = producer("committer");
             KafkaProducer<String, String> holder = producer("holder")) {
            committer.initTransactions();
            holder.initTransactions();
            committer.beginTransaction();
            for (long id = 1; id <= 6; id++) {
                committer.send(record(topic, id, "p" + id + "-v1", id));
            }
            committer.commitTransaction();

            committer.beginTransaction();
            committer.send(record(topic, 1, "aborted", -1));
            committer.send(record(topic, 2, null, 0)); // an aborted delete
            committer.send(record(topic, 7, "aborted", -7));
            committer.flush();
            committer.abortTransaction();

            holder.beginTransaction(); // left open while the table opens
            final long open = holder.send(record(topic, 3, "open", -3)).get().offset(); // partition 1
            holder.flush();

            committer.beginTransaction();
            committer.send(record(topic, 5, "p5-v2", 50)); // partition 1: behind the open transaction
            committer.send(record(topic, 6, "p6-v2", 60)); // partition 0: nothing open there
            committer.commitTransaction();
            // a commit returns before its markers are in the partitions: wait until the last stable offsets show
            // every transaction but the open one ended, so that the table's open sees them so too
            awaitLastStableOffsets(topic, Map.of(0, -1L, 1, open));

            final FlixAsyncLookupFunction function = open(options(topic));
            try {
                final SharedDimension dimension = function.dimension();
                assertEquals("p1-v1,1.0", lookup(function, 1));
                assertEquals("p2-v1,2.0", lookup(function, 2));
                assertEquals("none", lookup(function, 7));
                assertEquals("p3-v1,3.0", lookup(function, 3));
                assertEquals("p5-v1,5.0", lookup(function, 5), "behind the open transaction: not yet");
                assertEquals("p6-v2,60.0", lookup(function, 6));
                assertEquals(7, dimension.appliedRecords());

                holder.abortTransaction();
                awaitApplied(dimension, 8);
                assertEquals("p5-v2,50.0", lookup(function, 5));
                assertEquals("p3-v1,3.0", lookup(function, 3));
                assertEquals("p1-v1,1.0", lookup(function, 1));
                assertEquals(8, dimension.appliedRecords());
            } finally {
                function.close();
            }

            final Map<String, String> uncommitted = options(topic);
            uncommitted.put("properties.isolation.level", "read_uncommitted");
            final FlixAsyncLookupFunction dirty = open(uncommitted);
            try {
                assertEquals("aborted,-1.0", lookup(dirty, 1), "read_uncommitted, as the table asked");
                assertEquals("none", lookup(dirty, 2));
            } finally {
                dirty.close();
            }
        }
    }

    /**
     * With 'value.json.ignore-parse-errors', a value that is not JSON decodes to nothing and one that breaks off
     * inside the row to a null row: both are skipped and counted, and the reader goes on.
     */
    @Test
    void valuesTheFormatCannotParseAreSkippedAndCounted() throws Exception {
        final String topic = "products-unparsable";
        BROKER.createTopics(Map.of(topic, 1));
        try (KafkaProducer<String, String> producer = producer(null)) {
            producer.send(new ProducerRecord<>(topic, "{\"id\":1}", "{\"name\":\"a\",\"price\":1.0}"));
            producer.send(new ProducerRecord<>(topic, "{\"id\":2}", "not json"));
            producer.send(new ProducerRecord<>(topic, "{\"id\":3}", "{\"name\":\"c\" \"price\":3.0}"));
            producer.send(new ProducerRecord<>(topic, "{\"id\":4}", "[null]"));
            producer.send(new ProducerRecord<>(topic, "{\"id\":5}", "{\"name\":\"e\",\"price\":5.0}"));
            producer.flush();
        }
        final Map<String, String> options = options(topic);
        options.put("value.json.ignore-parse-errors", "true");
        final FlixAsyncLookupFunction function = open(options);
        try {
            final SharedDimension dimension = function.dimension();
            assertEquals(3, dimension.skippedRecords());
            assertEquals(2, dimension.appliedRecords());
            assertEquals("a,1.0", lookup(function, 1));
            assertEquals("none", lookup(function, 3));
            assertEquals("e,5.0", lookup(function, 5));
        } finally {
            function.close();
        }
    }

    /**
     * The brokers cannot be reached (a port nobody listens on): the open fails after 'lookup.bootstrap-timeout',
     * and the error names the bootstrap servers, the topic and the cause.
     */
    @Test
    void aTableWhoseBrokersCannotBeReachedFailsNamingServersTopicAndCause() throws Exception {
        final int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        final String servers = "localhost:" + port;
        final Map<String, String> options = options("products-nowhere");
        options.put("properties.bootstrap.servers", servers);
        options.put("lookup.bootstrap-timeout", "2 s");
        final FlixAsyncLookupFunction function = TestTables.function(SCHEMA, options, new int[] {0});
        final Exception e = assertThrows(Exception.class, () -> function.open(new FunctionContext(null)));
        assertInstanceOf(TimeoutException.class, e);
        final String message = e.getMessage();
        assertTrue(message.contains("'" + servers + "'"), message);
        assertTrue(message.contains("'products-nowhere'"), message);
        assertTrue(message.contains("lookup.bootstrap-timeout"), message);
        assertTrue(message.toLowerCase(java.util.Locale.ROOT).contains("connection refused"), message);
        assertTrue(e.getCause() != null && e.getCause().getMessage().toLowerCase(java.util.Locale.ROOT)
                .contains("connection refused"), String.valueOf(e.getCause()));
        assertTrue(SharedDimensions.openOn("products-nowhere").isEmpty());
    }

    /**
     * No broker answers at all: the open fails after the connect timeout ('properties.default.api.timeout.ms'), not
     * after 'lookup.bootstrap-timeout' (kept long here, for reading), naming the servers, the topic and the cause.
     */
    @Test
    void unreachableBrokersFailAfterTheConnectTimeoutNotTheBootstrapTimeout() throws Exception {
        final int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        final String servers = "localhost:" + port;
        final Map<String, String> options = options("products-unreachable");
        options.put("properties.bootstrap.servers", servers);
        options.put("properties.default.api.timeout.ms", "1500");
        options.put("lookup.bootstrap-timeout", "60 s");
        final FlixAsyncLookupFunction function = TestTables.function(SCHEMA, options, new int[] {0});
        final Exception e = assertThrows(Exception.class, () -> function.open(new FunctionContext(null)));
        Throwable unreachable = e;
        while (unreachable != null && !(unreachable instanceof KafkaChangelogReader.BrokersUnreachableException)) {
            unreachable = unreachable.getCause();
        }
        assertTrue(unreachable != null, "the connect-phase failure, not the bootstrap timeout: " + e);
        final String message = e.getMessage();
        assertTrue(message.contains("'" + servers + "'"), message);
        assertTrue(message.contains("'products-unreachable'"), message);
        assertTrue(message.contains("'properties.default.api.timeout.ms' (1500 ms)"), message);
        assertTrue(!message.contains("lookup.bootstrap-timeout"), message);
        assertTrue(message.toLowerCase(java.util.Locale.ROOT).contains("connection refused"), message);
        assertTrue(SharedDimensions.openOn("products-unreachable").isEmpty());
    }

    @Test
    void theConnectTimeoutIsTheConsumersDefaultApiTimeout() {
        assertEquals(60_000, KafkaChangelogReader.connectTimeout(Map.of()).toMillis());
        assertEquals(1_500, KafkaChangelogReader.connectTimeout(Map.of("default.api.timeout.ms", "1500")).toMillis());
    }
}
