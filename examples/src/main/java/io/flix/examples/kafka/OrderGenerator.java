package io.flix.examples.kafka;

import io.flix.examples.Order;
import io.flix.examples.Product;

import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Properties;
import java.util.SplittableRandom;

/**
 * Writes the pipeline's input: first the product catalog to the changelog topic (keyed by product id), then orders
 * at a chosen rate, with product updates (price changes, and withdrawals as tombstones) mixed in.
 *
 * <pre>
 * java -cp examples.jar io.flix.examples.kafka.OrderGenerator --bootstrap-servers localhost:9092 \
 *     --products 100000 --orders-per-second 5000 --update-fraction 0.05
 * </pre>
 *
 * Options (all optional): {@code --bootstrap-servers} (localhost:9092), {@code --orders-topic} (orders),
 * {@code --products-topic} (products), {@code --products N} (catalog size, 100000; ids 1..N),
 * {@code --orders-per-second R} (1000; 0 = as fast as the producer goes), {@code --orders N} (0 = until
 * stopped), {@code --update-fraction F} (product updates per order, 0.05), {@code --delete-fraction F} (share of
 * the updates that withdraw the product, 0.1), {@code --unknown-fraction F} (orders of ids beyond the catalog,
 * 0.01), {@code --malformed-fraction F} (orders that are not valid JSON, to show the dead-letter topic, 0),
 * {@code --skip-catalog} (do not write the catalog first), {@code --seed N} (42).
 *
 * <p>Every record's timestamp is the wall-clock time it was generated: the event time the job reads.
 */
public final class OrderGenerator {

    private static final String[] CATEGORIES = {"books", "garden", "kitchen", "toys", "music", "tools"};

    /** Generator options; {@link #parse} reads them from {@code --name value} arguments. */
    public record Options(String bootstrapServers, String ordersTopic, String productsTopic, long products,
                          double ordersPerSecond, long orders, double updateFraction, double deleteFraction,
                          double unknownFraction, double malformedFraction, boolean skipCatalog, long seed) {

        public static Options defaults() {
            return new Options("localhost:9092", "orders", "products", 100_000, 1000, 0, 0.05, 0.1, 0.01, 0,
                    false, 42);
        }

        public static Options parse(String[] args) {
            Options o = defaults();
            for (int i = 0; i < args.length; i++) {
                final String name = args[i];
                if (name.equals("--skip-catalog")) {
                    o = o.with(name, "true");
                    continue;
                }
                if (!name.startsWith("--") || i + 1 >= args.length) {
                    throw new IllegalArgumentException("expected --option value, got '" + name + "'");
                }
                o = o.with(name, args[++i]);
            }
            if (o.products < 1) {
                throw new IllegalArgumentException("--products must be >= 1");
            }
            return o;
        }

        Options with(String name, String v) {
            String bs = bootstrapServers, ot = ordersTopic, pt = productsTopic;
            long p = products, n = orders, s = seed;
            double r = ordersPerSecond, u = updateFraction, d = deleteFraction, x = unknownFraction,
                    m = malformedFraction;
            boolean skip = skipCatalog;
            switch (name) {
                case "--bootstrap-servers" -> bs = v;
                case "--orders-topic" -> ot = v;
                case "--products-topic" -> pt = v;
                case "--products" -> p = Long.parseLong(v);
                case "--orders-per-second" -> r = Double.parseDouble(v);
                case "--orders" -> n = Long.parseLong(v);
                case "--update-fraction" -> u = fraction(name, v, false);
                case "--delete-fraction" -> d = fraction(name, v, true);
                case "--unknown-fraction" -> x = fraction(name, v, true);
                case "--malformed-fraction" -> m = fraction(name, v, true);
                case "--skip-catalog" -> skip = Boolean.parseBoolean(v);
                case "--seed" -> s = Long.parseLong(v);
                default -> throw new IllegalArgumentException("unknown option " + name);
            }
            return new Options(bs, ot, pt, p, r, n, u, d, x, m, skip, s);
        }

        private static double fraction(String name, String v, boolean atMostOne) {
            final double f = Double.parseDouble(v);
            if (f < 0 || (atMostOne && f > 1)) {
                throw new IllegalArgumentException(name + " must be " + (atMostOne ? "in [0, 1]" : ">= 0"));
            }
            return f;
        }
    }

    /** What one run wrote. */
    public record Counts(long catalog, long orders, long updates, long deletes, long malformed) {
    }

    private OrderGenerator() {
    }

    public static void main(String[] args) throws Exception {
        final Options options = Options.parse(args);
        final Counts counts = run(options, true);
        System.out.println("done: " + counts);
    }

    /** Writes the catalog, then the orders and updates; returns once {@code orders} are written (never if 0). */
    public static Counts run(Options o, boolean progress) throws InterruptedException {
        final Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.bootstrapServers());
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.ACKS_CONFIG, "all");
        props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, "262144");
        final SplittableRandom random = new SplittableRandom(o.seed());
        long catalog = 0;
        long orders = 0;
        long updates = 0;
        long deletes = 0;
        long malformed = 0;
        final SendFailures failures = new SendFailures();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            if (!o.skipCatalog()) {
                for (long id = 1; id <= o.products(); id++) {
                    sendProduct(producer, o.productsTopic(), listing(id, random), failures);
                    catalog++;
                }
                producer.flush();
                failures.rethrow();
                if (progress) {
                    System.out.printf(Locale.ROOT, "catalog: %d products written to %s%n", catalog,
                            o.productsTopic());
                }
            }
            final long start = System.nanoTime();
            long lastReport = start;
            long reportedOrders = 0;
            double updateCredit = 0;
            while (o.orders() == 0 || orders < o.orders()) {
                final long due = o.ordersPerSecond() <= 0 ? orders + 1000
                        : (long) ((System.nanoTime() - start) / 1e9 * o.ordersPerSecond());
                if (due <= orders) {
                    Thread.sleep(1);
                    continue;
                }
                final long upTo = o.orders() == 0 ? due : Math.min(due, o.orders());
                for (; orders < upTo; orders++) {
                    updateCredit += o.updateFraction();
                    for (; updateCredit >= 1; updateCredit--) {
                        final long id = 1 + random.nextLong(o.products());
                        if (random.nextDouble() < o.deleteFraction()) {
                            producer.send(new ProducerRecord<>(o.productsTopic(), null, System.currentTimeMillis(),
                                    JsonCodec.productKeyBytes(id), (byte[]) null), failures);
                            deletes++;
                        } else {
                            sendProduct(producer, o.productsTopic(), listing(id, random), failures);
                        }
                        updates++;
                    }
                    final long orderId = orders + 1;
                    final byte[] key = Long.toString(orderId).getBytes(StandardCharsets.UTF_8);
                    final byte[] value;
                    if (random.nextDouble() < o.malformedFraction()) {
                        value = ("{\"orderId\":" + orderId + ",\"productId\":").getBytes(StandardCharsets.UTF_8);
                        malformed++;
                    } else {
                        final long productId = random.nextDouble() < o.unknownFraction()
                                ? o.products() + 1 + random.nextLong(o.products())
                                : 1 + random.nextLong(o.products());
                        value = JsonCodec.orderJson(new Order(orderId, productId, 1 + random.nextInt(5)));
                    }
                    producer.send(new ProducerRecord<>(o.ordersTopic(), null, System.currentTimeMillis(), key, value),
                            failures);
                    failures.rethrow();
                }
                final long now = System.nanoTime();
                if (progress && now - lastReport >= 5_000_000_000L) {
                    System.out.printf(Locale.ROOT, "orders=%d (%.0f/s) product updates=%d (deletes %d) "
                                    + "malformed=%d%n", orders, (orders - reportedOrders) / ((now - lastReport) / 1e9),
                            updates, deletes, malformed);
                    lastReport = now;
                    reportedOrders = orders;
                }
            }
            producer.flush();
            failures.rethrow();
        }
        return new Counts(catalog, orders, updates, deletes, malformed);
    }

    private static Product listing(long id, SplittableRandom random) {
        return new Product(id, "product-" + id, 100 + random.nextInt(100_000),
                CATEGORIES[(int) (id % CATEGORIES.length)], false);
    }

    private static void sendProduct(KafkaProducer<byte[], byte[]> producer, String topic, Product product,
                                    SendFailures failures) {
        producer.send(new ProducerRecord<>(topic, null, System.currentTimeMillis(),
                JsonCodec.productKeyBytes(product.id), JsonCodec.productJson(product)), failures);
    }

    /** Keeps the first failed send, so that the generator stops instead of dropping records silently. */
    private static final class SendFailures implements Callback {
        private volatile Exception first;

        @Override
        public void onCompletion(RecordMetadata metadata, Exception exception) {
            if (exception != null && first == null) {
                first = exception;
            }
        }

        void rethrow() {
            if (first != null) {
                throw new IllegalStateException("a send failed: " + first, first);
            }
        }
    }
}
