package io.flix.examples.kafka;

import io.flix.examples.Order;
import io.flix.examples.Product;
import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.Rejected;
import io.flix.index.Backend;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Properties;

/**
 * The Kafka pipeline: orders (JSON) enriched with their product from a product changelog topic (JSON, keyed by
 * product id, tombstones delete) through the FliX operator, written exactly once to an enriched topic (JSON);
 * records that cannot be used go to a dead-letter topic with the reason.
 *
 * <pre>{@code
 * products --KafkaSource--> parse --+--> FliX enrichment --> encode --> KafkaSink (EOS) --> enriched
 * orders   --KafkaSource--> parse --+         |                |
 *                             |               | rejected       | total overflows
 *                             +-- malformed --+----------------+--> KafkaSink (EOS) --> dead letters
 * }</pre>
 *
 * <h2>Running it</h2>
 * {@code flink run -c io.flix.examples.kafka.KafkaEnrichmentJob examples.jar [options]} (what the docker-compose
 * demo does), or as a local main. Options, all optional: {@code --bootstrap-servers} (localhost:9092),
 * {@code --orders-topic} (orders), {@code --products-topic} (products), {@code --enriched-topic}
 * (orders-enriched), {@code --dead-letter-topic} (orders-dlq), {@code --group-id} (flix-enrichment),
 * {@code --parallelism} (2), {@code --checkpoint-interval-ms} (10000), {@code --backend} (auto | cpu | gpu),
 * {@code --batch-size} (10000), {@code --flush-interval-ms} (100), {@code --out-of-orderness-ms} (5000),
 * {@code --idle-timeout-ms} (10000), {@code --transactional-id-prefix} (flix-enrichment),
 * {@code --starting-offsets} (earliest | latest | committed), {@code --bounded} (stop at the offsets that were the
 * latest at start, and finish), {@code --checkpoint-dir} (a URI such as {@code file:///tmp/checkpoints}; default:
 * the cluster's {@code execution.checkpointing.dir}), {@code --mode} (shared | keyed).
 *
 * <h2>The mode</h2>
 * {@code shared} (the default; {@code FlixEnrichment.shared}): every task manager holds the whole product dimension
 * once, the orders are looked up where they are parsed (no shuffle), every product update is applied once per task
 * manager. {@code keyed} ({@code FlixEnrichment.of}): the dimension is split by product over the subtasks, and each
 * order is sent to the subtask of its product. Choose keyed for a dimension one task manager cannot hold. Their
 * states differ (the operators have different uids), so a savepoint of one mode does not restore into the other:
 * Flink refuses it, naming the state it cannot map.
 *
 * <p>The checkpoints hold the whole dimension (the FliX operator's state): give them a checkpoint directory.
 * Without one, Flink keeps checkpoints in the job manager's memory, which takes at most 5 MB per state, about
 * 100,000 products of this demo; a larger checkpoint fails, and the job restarts from the previous one.
 *
 * <h2>Event time and ordering: what is guaranteed</h2>
 * The event time of an order or a product update is its Kafka record timestamp; both sources assign bounded
 * out-of-orderness watermarks (and go idle after the idle timeout, so a quiet changelog does not stall them). The
 * FliX operator flushes its micro-batches on each watermark and the enriched order keeps the order's timestamp.
 * <ul>
 *   <li>Updates of one product are applied in their topic order: one key, one partition, one subtask.</li>
 *   <li>An order is enriched with its product as it stood when the order's micro-batch was answered: in the keyed
 *       mode, every update that reached the operator before the order; in the shared mode, every update its task
 *       manager had applied (see docs/shared-mode.md).</li>
 *   <li>The two topics are <em>not</em> aligned in event time. An order is not held back until the product
 *       updates with earlier timestamps have arrived, so when both topics are read from the beginning the first
 *       orders may find no product yet ({@code "product": null}), and an update racing an order may or may not
 *       be seen by it. Results are deterministic when the products are in before the orders that need them (load
 *       the changelog first, or start from a savepoint that holds the dimension), which is what the tests do.</li>
 * </ul>
 *
 * <h2>Exactly once</h2>
 * With checkpointing, both sinks write Kafka transactions committed when a checkpoint completes
 * ({@link DeliveryGuarantee#EXACTLY_ONCE}): read the enriched and dead-letter topics with
 * {@code isolation.level=read_committed}; records appear there one checkpoint after they are written. After a
 * failure the job resumes from its last checkpoint: the source offsets and the FliX index with it, and aborted
 * transactions hide what was written since.
 *
 * <h2>Dead letters</h2>
 * An order that is not JSON, lacks a field or holds a value out of range, a product record without a key (or whose
 * key is not a product id, or whose value is not JSON or lacks its price), an order whose total overflows (see
 * {@link JsonCodec} for what is accepted), and the records the FliX operator rejects, go to the dead-letter topic
 * as {@link DeadLetter}s with the reason, the source topic, partition and offset, and the original key and value;
 * the job goes on. A letter carries at most the first 64 KiB of a record (and says where it was cut), so it always
 * fits in a Kafka request however large the record was.
 */
public final class KafkaEnrichmentJob {

    /** Dead letters of the parse steps. */
    static final OutputTag<DeadLetter> DEAD_LETTERS = new OutputTag<>("dead-letters",
            TypeInformation.of(DeadLetter.class));

    /** The enrichment's name: its lookups' operator; in the shared mode its writers' is this with ": dimension". */
    public static final String ENRICHMENT = "FliX product enrichment";

    private KafkaEnrichmentJob() {
    }

    /** The job's options; {@link #parse} reads them from {@code --name value} arguments. */
    public record Options(String bootstrapServers, String ordersTopic, String productsTopic, String enrichedTopic,
                          String deadLetterTopic, String groupId, int parallelism, long checkpointIntervalMs,
                          Backend backend, int batchSize, long flushIntervalMs, long outOfOrdernessMs,
                          long idleTimeoutMs, String transactionalIdPrefix, String startingOffsets,
                          boolean bounded, String checkpointDir, String mode) implements Serializable {

        public static Options defaults() {
            return new Options("localhost:9092", "orders", "products", "orders-enriched", "orders-dlq",
                    "flix-enrichment", 2, 10_000, Backend.AUTO, 10_000, 100, 5_000, 10_000, "flix-enrichment",
                    "earliest", false, null, "shared");
        }

        public static Options parse(String[] args) {
            Options o = defaults();
            for (int i = 0; i < args.length; i++) {
                final String name = args[i];
                if (name.equals("--bounded")) {
                    o = o.with(name, "true");
                    continue;
                }
                if (!name.startsWith("--") || i + 1 >= args.length) {
                    throw new IllegalArgumentException("expected --option value, got '" + name + "'");
                }
                o = o.with(name, args[++i]);
            }
            return o;
        }

        Options with(String name, String v) {
            String bs = bootstrapServers, ot = ordersTopic, pt = productsTopic, et = enrichedTopic,
                    dt = deadLetterTopic, g = groupId, tx = transactionalIdPrefix, so = startingOffsets;
            int p = parallelism, bsz = batchSize;
            long ci = checkpointIntervalMs, fi = flushIntervalMs, ooo = outOfOrdernessMs, idle = idleTimeoutMs;
            Backend b = backend;
            boolean bd = bounded;
            String cd = checkpointDir, m = mode;
            switch (name) {
                case "--bootstrap-servers" -> bs = v;
                case "--orders-topic" -> ot = v;
                case "--products-topic" -> pt = v;
                case "--enriched-topic" -> et = v;
                case "--dead-letter-topic" -> dt = v;
                case "--group-id" -> g = v;
                case "--parallelism" -> p = Integer.parseInt(v);
                case "--checkpoint-interval-ms" -> ci = Long.parseLong(v);
                case "--backend" -> b = Backend.valueOf(v.toUpperCase(Locale.ROOT));
                case "--batch-size" -> bsz = Integer.parseInt(v);
                case "--flush-interval-ms" -> fi = Long.parseLong(v);
                case "--out-of-orderness-ms" -> ooo = Long.parseLong(v);
                case "--idle-timeout-ms" -> idle = Long.parseLong(v);
                case "--transactional-id-prefix" -> tx = v;
                case "--starting-offsets" -> so = v;
                case "--bounded" -> bd = Boolean.parseBoolean(v);
                case "--checkpoint-dir" -> cd = v;
                case "--mode" -> {
                    if (!v.equals("shared") && !v.equals("keyed")) {
                        throw new IllegalArgumentException("--mode must be shared or keyed, was " + v);
                    }
                    m = v;
                }
                default -> throw new IllegalArgumentException("unknown option " + name);
            }
            return new Options(bs, ot, pt, et, dt, g, p, ci, b, bsz, fi, ooo, idle, tx, so, bd, cd, m);
        }

        OffsetsInitializer startingOffsetsInitializer() {
            return switch (startingOffsets) {
                case "earliest" -> OffsetsInitializer.earliest();
                case "latest" -> OffsetsInitializer.latest();
                case "committed" -> OffsetsInitializer.committedOffsets(
                        org.apache.kafka.clients.consumer.OffsetResetStrategy.EARLIEST);
                default -> throw new IllegalArgumentException("--starting-offsets takes earliest, latest or "
                        + "committed, was " + startingOffsets);
            };
        }
    }

    public static void main(String[] args) throws Exception {
        final Options options = Options.parse(args);
        final Configuration conf = new Configuration();
        if (options.checkpointDir() != null) {
            conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, options.checkpointDir());
        }
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(options.parallelism());
        env.enableCheckpointing(options.checkpointIntervalMs());
        final OffsetsInitializer stop = options.bounded() ? OffsetsInitializer.latest() : null;
        define(env, options, stop, stop, null);
        env.execute("FliX Kafka enrichment");
    }

    /**
     * Adds the pipeline to {@code env}. Checkpointing is the caller's (exactly-once output needs it).
     *
     * @param productsStop where the products source stops (bounded), or null to read on
     * @param ordersStop   where the orders source stops (bounded), or null to read on
     * @param orderTap     applied to each parsed order before the enrichment (tests inject failures here), or null
     */
    public static void define(StreamExecutionEnvironment env, Options options, OffsetsInitializer productsStop,
                              OffsetsInitializer ordersStop, MapFunction<Order, Order> orderTap) {
        final SingleOutputStreamOperator<Product> products = env.fromSource(
                        source(options, options.productsTopic(), productsStop), watermarks(options), "products")
                .uid("products-source")
                .process(new ParseProducts(), TypeInformation.of(Product.class))
                .name("parse products").uid("parse-products");
        final SingleOutputStreamOperator<Order> parsedOrders = env.fromSource(
                        source(options, options.ordersTopic(), ordersStop), watermarks(options), "orders")
                .uid("orders-source")
                .process(new ParseOrders(), TypeInformation.of(Order.class))
                .name("parse orders").uid("parse-orders");
        final DataStream<Order> orders = orderTap == null ? parsedOrders
                : parsedOrders.map(orderTap, TypeInformation.of(Order.class)).name("order tap").uid("order-tap");

        final boolean shared = options.mode().equals("shared");
        final FlixEnrichment<Product, Order, Product> enrichment = (shared
                ? FlixEnrichment.shared(products, orders) : FlixEnrichment.of(products, orders))
                .key(p -> p.id, o -> o.productId)
                .payload(p -> p.withdrawn ? null : p, Product.class)
                .batchSize(options.batchSize())
                .flushInterval(Duration.ofMillis(options.flushIntervalMs()))
                .backend(options.backend())
                .name(ENRICHMENT)
                // the modes' states differ: a savepoint of one is not restored into the other
                .uid(shared ? "product-enrichment-shared" : "product-enrichment");
        final SingleOutputStreamOperator<Tuple2<byte[], byte[]>> enriched = enrichment.build()
                .process(new EncodeEnriched(), Types.TUPLE(Types.PRIMITIVE_ARRAY(Types.BYTE),
                        Types.PRIMITIVE_ARRAY(Types.BYTE)))
                .name("encode enriched orders").uid("encode-enriched");
        enriched.sinkTo(exactlyOnceSink(options, options.transactionalIdPrefix() + "-enriched",
                        new KeyValueSerializer(options.enrichedTopic())))
                .name("enriched orders").uid("enriched-sink");

        final DataStream<DeadLetter> rejected = enrichment.rejected()
                .map(KafkaEnrichmentJob::deadLetter, TypeInformation.of(DeadLetter.class))
                .name("rejected as dead letters").uid("rejected-dead-letters");
        products.getSideOutput(DEAD_LETTERS).union(parsedOrders.getSideOutput(DEAD_LETTERS), rejected,
                        enriched.getSideOutput(DEAD_LETTERS))
                .sinkTo(exactlyOnceSink(options, options.transactionalIdPrefix() + "-dlq",
                        new DeadLetterSerializer(options.deadLetterTopic())))
                .name("dead letters").uid("dead-letter-sink");
    }

    private static KafkaSource<KafkaRecord> source(Options options, String topic, OffsetsInitializer stop) {
        final KafkaSourceBuilder<KafkaRecord> builder = KafkaSource.<KafkaRecord>builder()
                .setBootstrapServers(options.bootstrapServers())
                .setTopics(topic)
                .setGroupId(options.groupId())
                .setClientIdPrefix(options.groupId() + "-" + topic)
                .setStartingOffsets(options.startingOffsetsInitializer())
                .setDeserializer(new RawRecords())
                // only committed product updates and orders (the generator and upstream jobs may write in
                // transactions)
                .setProperty(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        if (stop != null) {
            builder.setBounded(stop);
        }
        return builder.build();
    }

    private static WatermarkStrategy<KafkaRecord> watermarks(Options options) {
        // the Kafka record timestamp, which the source sets on each record, is the event time
        return WatermarkStrategy.<KafkaRecord>forBoundedOutOfOrderness(
                        Duration.ofMillis(options.outOfOrdernessMs()))
                .withIdleness(Duration.ofMillis(options.idleTimeoutMs()));
    }

    private static <T> KafkaSink<T> exactlyOnceSink(Options options, String transactionalIdPrefix,
                                                    KafkaRecordSerializationSchema<T> serializer) {
        final Properties producer = new Properties();
        // longer than any checkpoint should take, within the broker's transaction.max.timeout.ms (15 min)
        producer.setProperty("transaction.timeout.ms", "600000");
        return KafkaSink.<T>builder()
                .setBootstrapServers(options.bootstrapServers())
                .setRecordSerializer(serializer)
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(transactionalIdPrefix)
                .setKafkaProducerConfig(producer)
                .build();
    }

    static DeadLetter deadLetter(Rejected rejected) {
        return DeadLetter.of("enrichment", rejected.input + ": " + rejected.reason, rejected.record);
    }

    /** Every Kafka record, unparsed: parsing errors become dead letters downstream instead of source failures. */
    static final class RawRecords implements KafkaRecordDeserializationSchema<KafkaRecord> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<KafkaRecord> out) {
            out.collect(new KafkaRecord(record.topic(), record.partition(), record.offset(), record.timestamp(),
                    record.key(), record.value()));
        }

        @Override
        public TypeInformation<KafkaRecord> getProducedType() {
            return TypeInformation.of(KafkaRecord.class);
        }
    }

    static final class ParseOrders extends ProcessFunction<KafkaRecord, Order> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(KafkaRecord record, Context context, Collector<Order> out) {
            try {
                out.collect(JsonCodec.parseOrder(record.value));
            } catch (JsonCodec.MalformedRecordException e) {
                context.output(DEAD_LETTERS, DeadLetter.of("orders", e.getMessage(), record));
            }
        }
    }

    static final class ParseProducts extends ProcessFunction<KafkaRecord, Product> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(KafkaRecord record, Context context, Collector<Product> out) {
            try {
                out.collect(JsonCodec.parseProduct(record.key, record.value));
            } catch (JsonCodec.MalformedRecordException e) {
                context.output(DEAD_LETTERS, DeadLetter.of("products", e.getMessage(), record));
            }
        }
    }

    /**
     * Each enriched order as its Kafka key (the order id) and JSON value, or a dead letter where it cannot be written
     * (its total overflows). The record keeps the order's timestamp.
     */
    static final class EncodeEnriched extends ProcessFunction<Enriched<Order, Product>, Tuple2<byte[], byte[]>> {
        private static final long serialVersionUID = 1L;

        @Override
        public void processElement(Enriched<Order, Product> enriched, Context context,
                                   Collector<Tuple2<byte[], byte[]>> out) {
            final byte[] value;
            try {
                value = JsonCodec.enrichedJson(enriched, context.timestamp());
            } catch (JsonCodec.MalformedRecordException e) {
                context.output(DEAD_LETTERS, DeadLetter.of("enrichment", e.getMessage(),
                        new String(JsonCodec.orderJson(enriched.event), StandardCharsets.UTF_8)));
                return;
            }
            out.collect(Tuple2.of(Long.toString(enriched.event.orderId).getBytes(StandardCharsets.UTF_8), value));
        }
    }

    /** Records of a key and a value, with the stream record's timestamp. */
    static final class KeyValueSerializer implements KafkaRecordSerializationSchema<Tuple2<byte[], byte[]>> {
        private static final long serialVersionUID = 1L;
        private final String topic;

        KeyValueSerializer(String topic) {
            this.topic = topic;
        }

        @Override
        public ProducerRecord<byte[], byte[]> serialize(Tuple2<byte[], byte[]> keyValue, KafkaSinkContext context,
                                                        Long timestamp) {
            return new ProducerRecord<>(topic, null, timestamp, keyValue.f0, keyValue.f1);
        }
    }

    static final class DeadLetterSerializer implements KafkaRecordSerializationSchema<DeadLetter> {
        private static final long serialVersionUID = 1L;
        private final String topic;

        DeadLetterSerializer(String topic) {
            this.topic = topic;
        }

        @Override
        public ProducerRecord<byte[], byte[]> serialize(DeadLetter letter, KafkaSinkContext context,
                                                        Long timestamp) {
            return new ProducerRecord<>(topic, null, timestamp,
                    letter.stage.getBytes(StandardCharsets.UTF_8), JsonCodec.deadLetterJson(letter));
        }
    }
}
