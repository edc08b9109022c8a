package io.flix.examples.cluster;

import io.flix.examples.Order;
import io.flix.examples.Product;
import io.flix.examples.kafka.JsonCodec;
import io.flix.examples.kafka.SqlKafkaEnrichmentJob;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * (e) A SQL job with a {@code 'flix'} lookup join, submitted as the jar ({@link SqlKafkaEnrichmentJob}, bounded):
 * orders from a Kafka topic joined to a products table kept from an upsert topic, written exactly once to a Kafka
 * topic. The job finishes when the orders end; the output topic, read with {@code read_committed}, holds each order
 * once with its product's columns (nulls where the product is unknown or deleted).
 */
class SessionClusterSqlITCase {

    private static final int PRODUCTS = 300;
    private static final int ORDERS = 1200;
    private static final long TIME_BASE = System.currentTimeMillis();

    @RegisterExtension
    static final SharedKafkaBroker KAFKA = new SharedKafkaBroker();

    @RegisterExtension
    static final SessionClusterExtension CLUSTER = new SessionClusterExtension();

    @Test
    void sqlLookupJoinJarEnrichesEachOrderOnce() throws Exception {
        final FlinkSessionCluster cluster = CLUSTER.cluster();
        final long start = System.nanoTime();
        final Topics topics = new Topics(KAFKA.broker());
        topics.create(Map.of("orders-e", 2, "products-e", 2, "enriched-e", 2));

        // the upsert topic: key {"id": n}; price changes of every fifth product, every eleventh deleted
        final Map<Long, Product> products = new TreeMap<>();
        final List<ProducerRecord<byte[], byte[]>> changelog = new ArrayList<>();
        for (long id = 1; id <= PRODUCTS; id++) {
            changelog.add(product(new Product(id, "sql-" + id, 40 + id, id % 3 == 0 ? "garden" : "tools", false)));
        }
        for (long id = 5; id <= PRODUCTS; id += 5) {
            changelog.add(product(new Product(id, "sql-" + id + "-new", 900 + id, "sale", false)));
        }
        for (long id = 11; id <= PRODUCTS; id += 11) {
            changelog.add(new ProducerRecord<>("products-e", null, TIME_BASE, key(id), (byte[]) null));
        }
        for (ProducerRecord<byte[], byte[]> r : changelog) {
            final long id = JsonCodec.tree(r.key()).path("id").asLong();
            if (r.value() == null) {
                products.remove(id);
            } else {
                final JsonNode v = JsonCodec.tree(r.value());
                products.put(id, new Product(id, v.path("name").asText(), v.path("priceCents").asLong(),
                        v.path("category").asText(), false));
            }
        }
        topics.send(changelog);

        final List<ProducerRecord<byte[], byte[]>> orders = new ArrayList<>();
        final List<String> expected = new ArrayList<>();
        for (long orderId = 1; orderId <= ORDERS; orderId++) {
            final Order o = new Order(orderId, 1 + (orderId * 7919) % (PRODUCTS + 15), 1 + (int) (orderId % 4));
            orders.add(new ProducerRecord<>("orders-e", (int) (orderId % 2), TIME_BASE + orderId,
                    Long.toString(orderId).getBytes(StandardCharsets.UTF_8), JsonCodec.orderJson(o)));
            final Product p = products.get(o.productId);
            expected.add(o.orderId + "|" + o.productId + "|" + o.quantity + "|" + (p == null ? "null|null|null|null"
                    : p.name + "|" + p.category + "|" + p.priceCents + "|" + p.priceCents * o.quantity));
        }
        topics.send(orders);

        final String job = cluster.submit(SqlKafkaEnrichmentJob.class.getName(), List.of(
                "--bootstrap-servers", topics.bootstrapServers(), "--orders-topic", "orders-e",
                "--products-topic", "products-e", "--enriched-topic", "enriched-e", "--group-id", "cluster-e",
                "--transactional-id-prefix", "cluster-e", "--parallelism", "2", "--checkpoint-interval-ms", "1000",
                "--backend", EnrichmentRun.BACKEND, "--bounded"), null);
        final double submitted = (System.nanoTime() - start) / 1e9;
        cluster.awaitJobState(job, "FINISHED");
        final double finished = (System.nanoTime() - start) / 1e9;

        final List<String> actual = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : topics.readCommitted("enriched-e")) {
            final JsonNode n = JsonCodec.tree(r.value());
            actual.add(n.path("orderId").asLong() + "|" + n.path("productId").asLong() + "|"
                    + n.path("quantity").asInt() + "|" + text(n, "name") + "|" + text(n, "category") + "|"
                    + text(n, "priceCents") + "|" + text(n, "totalCents"));
        }
        Collections.sort(actual);
        Collections.sort(expected);
        assertEquals(ORDERS, new HashSet<>(actual).size(), () -> "distinct joined orders; "
                + EnrichmentRun.difference(expected, actual));
        assertEquals(expected, actual, "the joined topic: each order once, with its product's columns");
        System.out.printf("cluster (e) SQL lookup join jar: %d changelog records (%d products left), %d orders -> "
                        + "%d joined (%d with a product); submitted %.1f s, FINISHED %.1f s after the start%n",
                changelog.size(), products.size(), ORDERS, actual.size(),
                actual.stream().filter(s -> !s.contains("|null|null|")).count(), submitted, finished);
    }

    private static String text(JsonNode n, String field) {
        final JsonNode v = n.path(field);
        return v.isNull() || v.isMissingNode() ? "null" : v.asText();
    }

    private static ProducerRecord<byte[], byte[]> product(Product p) {
        return new ProducerRecord<>("products-e", null, TIME_BASE, key(p.id), JsonCodec.productJson(p));
    }

    private static byte[] key(long id) {
        return ("{\"id\":" + id + "}").getBytes(StandardCharsets.UTF_8);
    }
}
