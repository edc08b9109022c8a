package io.flix.examples.cluster;

import io.flix.examples.Order;
import io.flix.examples.Product;
import io.flix.examples.kafka.JsonCodec;
import io.flix.examples.kafka.KafkaEnrichmentJob;
import io.flix.index.Backend;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * One run of {@link KafkaEnrichmentJob} on the cluster: its topics, the product changelog and orders it writes, and
 * the enriched orders it must read back, computed here from what was written (as in
 * {@code KafkaEnrichmentJobITCase}).
 */
final class EnrichmentRun {

    static final String JOB = KafkaEnrichmentJob.class.getName();
    /**
     * The backend the jobs require: the GPU where this machine has a usable one (the task managers are processes of
     * this machine), so that a job that cannot open the GPU fails rather than run on the CPU; else the CPU.
     */
    static final String BACKEND = Backend.GPU.unavailableReason() == null ? "gpu" : "cpu";
    /** The shared mode's writers (the dimension's appliers): their operator's name. */
    static final String WRITERS = KafkaEnrichmentJob.ENRICHMENT + ": dimension";
    /** Event times near now: the broker deletes records older than its retention (7 days) by their timestamps. */
    private static final long TIME_BASE = System.currentTimeMillis();

    final String name;
    final String orders;
    final String products;
    final String enriched;
    final String deadLetters;
    private final Topics topics;
    private final String productPrefix;
    private final long priceBase;
    /** The dimension as the changelog written so far leaves it. */
    final Map<Long, Product> dimension = new TreeMap<>();
    long productRecords;

    private EnrichmentRun(Topics topics, String name, String productPrefix, long priceBase) {
        this.topics = topics;
        this.name = name;
        this.orders = "orders-" + name;
        this.products = "products-" + name;
        this.enriched = "orders-enriched-" + name;
        this.deadLetters = "orders-dlq-" + name;
        this.productPrefix = productPrefix;
        this.priceBase = priceBase;
    }

    /** A run with its own four topics, two partitions each. */
    static EnrichmentRun create(Topics topics, String name, String productPrefix, long priceBase) throws Exception {
        final EnrichmentRun run = new EnrichmentRun(topics, name, productPrefix, priceBase);
        topics.create(Map.of(run.orders, 2, run.products, 2, run.enriched, 2, run.deadLetters, 1));
        return run;
    }

    /** The job's arguments: {@link #BACKEND}, shared mode, this run's topics and transactional ids. */
    List<String> jobArgs(int parallelism, long checkpointIntervalMs) {
        return jobArgs(parallelism, checkpointIntervalMs, enriched, name);
    }

    List<String> jobArgs(int parallelism, long checkpointIntervalMs, String enrichedTopic, String ids) {
        return List.of("--bootstrap-servers", topics.bootstrapServers(),
                "--orders-topic", orders, "--products-topic", products,
                "--enriched-topic", enrichedTopic, "--dead-letter-topic", deadLetters,
                "--group-id", "cluster-" + ids, "--transactional-id-prefix", "cluster-" + ids,
                "--parallelism", Integer.toString(parallelism),
                "--checkpoint-interval-ms", Long.toString(checkpointIntervalMs),
                "--backend", BACKEND, "--mode", "shared", "--batch-size", "512", "--flush-interval-ms", "20");
    }

    /**
     * Lists products 1..count, changes the price of every seventh and withdraws every seventeenth (a tombstone);
     * returns the number of changelog records written.
     */
    long writeProducts(int count) throws Exception {
        final List<ProducerRecord<byte[], byte[]>> changelog = new ArrayList<>();
        for (long id = 1; id <= count; id++) {
            changelog.add(product(new Product(id, productPrefix + "-" + id, priceBase + id, category(id), false)));
        }
        for (long id = 7; id <= count; id += 7) {
            changelog.add(product(new Product(id, productPrefix + "-" + id + "-v2", 2 * priceBase + id, category(id),
                    false)));
        }
        for (long id = 17; id <= count; id += 17) {
            changelog.add(new ProducerRecord<>(products, null, TIME_BASE - 1, JsonCodec.productKeyBytes(id),
                    (byte[]) null));
        }
        for (ProducerRecord<byte[], byte[]> r : changelog) {
            final long id = Long.parseLong(new String(r.key(), StandardCharsets.UTF_8));
            if (r.value() == null) {
                dimension.remove(id);
            } else {
                dimension.put(id, JsonCodec.parseProduct(r.key(), r.value()));
            }
        }
        topics.send(changelog);
        productRecords += changelog.size();
        return changelog.size();
    }

    /** Orders {@code first..last} of products spread over ids 1..(products + 20): some unknown, some withdrawn. */
    List<String> writeOrders(long first, long last, int products) throws Exception {
        final List<Order> batch = new ArrayList<>();
        for (long orderId = first; orderId <= last; orderId++) {
            batch.add(new Order(orderId, 1 + (orderId * 7919) % (products + 20), 1 + (int) (orderId % 5)));
        }
        return writeOrders(batch);
    }

    /** Writes the orders (each order's timestamp: a base plus its id); returns the enriched orders they must give. */
    List<String> writeOrders(List<Order> batch) throws Exception {
        final List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
        final List<String> expected = new ArrayList<>();
        for (Order o : batch) {
            final long time = TIME_BASE + o.orderId;
            records.add(new ProducerRecord<>(orders, (int) (o.orderId % 2), time,
                    Long.toString(o.orderId).getBytes(StandardCharsets.UTF_8), JsonCodec.orderJson(o)));
            expected.add(expected(o, time, dimension.get(o.productId)));
        }
        topics.send(records);
        return expected;
    }

    /** Writes a record that is not an order; the job sends it to the dead-letter topic. */
    void writeMalformedOrder(String value) throws Exception {
        topics.send(List.of(new ProducerRecord<>(orders, 0, TIME_BASE, null, value.getBytes(StandardCharsets.UTF_8))));
    }

    /** The committed enriched orders, canonical and sorted. */
    List<String> readEnriched() {
        return canonical(topics.readCommitted(enriched));
    }

    static List<String> canonical(List<ConsumerRecord<byte[], byte[]>> records) {
        final List<String> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            try {
                out.add(canonical(JsonCodec.tree(r.value())));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        Collections.sort(out);
        return out;
    }

    /**
     * Waits until every applier of the job's dimension (one per task manager that runs its writers) has applied all
     * {@link #productRecords}: only then may orders be written and find their product (see
     * {@link KafkaEnrichmentJob}: the topics are not aligned in event time). Read from the REST API's metrics.
     */
    void awaitDimensionLoaded(FlinkSessionCluster cluster, String jobId) {
        final String[] seen = {""};
        FlinkSessionCluster.await(() -> {
            final Set<String> writerTaskManagers = new HashSet<>();
            cluster.placement(jobId).forEach((vertex, subtasks) -> {
                if (vertex.replaceAll("[^A-Za-z0-9]", "_").contains(WRITERS.replaceAll("[^A-Za-z0-9]", "_"))) {
                    writerTaskManagers.addAll(subtasks.values());
                }
            });
            final Map<Integer, String> applier = cluster.operatorMetric(jobId, WRITERS, "flixApplier");
            final Map<Integer, String> updates = cluster.operatorMetric(jobId, WRITERS, "flixUpdates");
            seen[0] = "writers on " + writerTaskManagers + ", flixApplier " + applier + ", flixUpdates " + updates;
            int loaded = 0;
            for (Map.Entry<Integer, String> a : applier.entrySet()) {
                if (a.getValue().equals("1")) {
                    if (Long.parseLong(updates.getOrDefault(a.getKey(), "0")) < productRecords) {
                        return false;
                    }
                    loaded++;
                }
            }
            return !writerTaskManagers.isEmpty() && loaded == writerTaskManagers.size();
        }, () -> "every applier of job " + jobId + " applied the " + productRecords + " product records; "
                + seen[0]);
    }

    /** The enriched order the job must write, in {@link #canonical(JsonNode)}'s form. */
    static String expected(Order o, long time, Product p) {
        return o.orderId + "|" + o.productId + "|" + o.quantity + "|" + time + "|"
                + (p == null ? "null|null" : p.id + "," + p.name + "," + p.priceCents + "," + p.category + "|"
                + p.priceCents * o.quantity);
    }

    static String canonical(JsonNode n) {
        final JsonNode p = n.path("product");
        return n.path("orderId").asLong() + "|" + n.path("productId").asLong() + "|" + n.path("quantity").asInt()
                + "|" + n.path("orderTime").asLong() + "|"
                + (p.isNull() || p.isMissingNode() ? "null|" + n.path("totalCents")
                : p.path("id").asLong() + "," + p.path("name").asText() + "," + p.path("priceCents").asLong() + ","
                + p.path("category").asText() + "|" + n.path("totalCents").asLong());
    }

    /** What is missing and what is extra, for a failure message. */
    static String difference(List<String> expected, List<String> actual) {
        final List<String> missing = new ArrayList<>(expected);
        actual.forEach(missing::remove);
        final List<String> extra = new ArrayList<>(actual);
        expected.forEach(extra::remove);
        return "read " + actual.size() + ", expected " + expected.size() + "; missing " + missing.size() + " "
                + missing.subList(0, Math.min(10, missing.size())) + ", extra " + extra.size() + " "
                + extra.subList(0, Math.min(10, extra.size()));
    }

    private ProducerRecord<byte[], byte[]> product(Product p) {
        return new ProducerRecord<>(products, null, TIME_BASE - 1, JsonCodec.productKeyBytes(p.id),
                JsonCodec.productJson(p));
    }

    private static String category(long id) {
        return id % 2 == 0 ? "books" : "toys";
    }
}
