package io.flix.examples;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.time.Duration;
import java.util.BitSet;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The embedded demo: a local Flink job (no cluster, no Kafka, no GPU needed) that keeps a catalog of one million
 * generated products in FliX ({@link FlixEnrichment}, the GPU backend where one is present), changes prices and
 * withdraws products, then enriches a stream of generated orders with each order's product. It prints a few
 * enriched orders and, as its last line, {@code enriched=<count> throughput=<events/s> backend=<cpu|gpu>}.
 *
 * <p>Arguments (all optional): {@code --products N --orders N --parallelism N --mode shared|keyed}. The shared mode
 * ({@code FlixEnrichment.shared}, the default: the catalog fits one task manager, and its lookups need no shuffle)
 * holds the catalog once in the task manager; the keyed mode ({@code FlixEnrichment.of}) splits it by product over
 * the subtasks. In the shared mode the orders wait until every catalog change is applied
 * ({@link SharedDimensionGate}), so each order has one right answer; in the keyed mode they wait until every product
 * is listed, while the changes go on. A production job would bootstrap the catalog from a savepoint instead.
 */
public final class EnrichmentJob {

    /** Set when the catalog is loaded: the orders' sources wait for it. Local mode: one JVM. */
    private static volatile CompletableFuture<Void> catalogLoaded;
    private static final AtomicLong PRODUCTS_STORED = new AtomicLong();
    private static final AtomicLong ORDERS_START_NANOS = new AtomicLong();
    private static final LongAdder ENRICHED = new LongAdder();
    private static final LongAdder MATCHED = new LongAdder();
    private static final AtomicInteger PRINTED = new AtomicInteger();

    private EnrichmentJob() {
    }

    /** The shared mode's enrichment: the name its gate knows it by. */
    static final String NAME = "product enrichment";
    /** Only a safety net for the local demo's load, should the job hang. */
    private static final Duration SAFETY_NET = Duration.ofMinutes(10);

    public static void main(String[] args) throws Exception {
        final Args options = Args.of(args);
        final long products = options.number("--products", 1_000_000);
        final long orders = options.number("--orders", 3_000_000);
        final int parallelism = (int) options.number("--parallelism", 2);
        if (products < 1 || products > Integer.MAX_VALUE || orders < 0 || parallelism < 1) {
            throw new IllegalArgumentException("--products must be 1 to " + Integer.MAX_VALUE + ", --orders >= 0 and "
                    + "--parallelism >= 1; were " + products + ", " + orders + " and " + parallelism);
        }
        final String mode = options.text("--mode", "shared");
        if (!mode.equals("shared") && !mode.equals("keyed")) {
            throw new IllegalArgumentException("--mode must be shared or keyed, was " + mode);
        }
        run(products, orders, parallelism, mode.equals("shared"));
    }

    /** What a run enriched. */
    record Summary(long enriched, long matched) {
    }

    /** Runs the job and prints its lines. */
    static Summary run(long products, long orders, int parallelism, boolean shared) throws Exception {
        final long changes = products / 10;
        final Backend backend = Backend.AUTO;
        catalogLoaded = new CompletableFuture<>();
        PRODUCTS_STORED.set(0);
        ENRICHED.reset();
        MATCHED.reset();
        PRINTED.set(0);

        if (shared) {
            SharedDimensionGate.reset(NAME);
        }
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(
                shared ? SharedDimensionGate.addTo(new Configuration()) : new Configuration());
        env.setParallelism(parallelism);

        // the catalog: every product listed once, then price changes and withdrawals (one source: in order)
        final GeneratedSource<Product> allProducts = GeneratedSource.of(
                i -> i < products ? listing(i) : change(i, products), products + changes,
                TypeInformation.of(Product.class));
        final GeneratedSource<Product> catalogSource = shared
                ? allProducts.heldBackUntil(SharedDimensionGate.updatesAfterLookupsOpen(NAME)) : allProducts;
        final DataStream<Product> catalog = env.fromSource(catalogSource, WatermarkStrategy.noWatermarks(), "products")
                .setParallelism(1);
        final long catalogListings = products;
        final DataStream<Order> orderStream = env.fromSource(GeneratedSource.of(
                        i -> new Order(i, orderedProduct(i, products), 1 + (int) (i % 5)), orders,
                        TypeInformation.of(Order.class))
                        .heldBackUntil(shared ? SharedDimensionGate.lookupsAfterLoad(NAME) : () -> catalogLoaded),
                WatermarkStrategy.noWatermarks(), "orders");

        final FlixEnrichment<Product, Order, Product> enrichment = (shared
                ? FlixEnrichment.shared(catalog, orderStream) : FlixEnrichment.of(catalog, orderStream))
                .key(p -> p.id, o -> o.productId)
                .payload(p -> {
                    if (!shared && PRODUCTS_STORED.incrementAndGet() == catalogListings) {
                        ORDERS_START_NANOS.set(System.nanoTime());
                        catalogLoaded.complete(null);
                    }
                    return p.withdrawn ? null : p;
                }, Product.class)
                .batchSize(20_000)
                .flushInterval(Duration.ofMillis(50))
                .backend(backend)
                .name(NAME)
                .uid("product-enrichment");
        enrichment.build().sinkTo(new CountingSink()).name("count");
        enrichment.rejected().print("rejected");

        final long start = System.nanoTime();
        final JobClient job = env.executeAsync("FliX enrichment demo");
        if (shared) {
            SharedDimensionGate.release(job, NAME, parallelism, products + changes, listedAtTheEnd(products).cardinality(),
                    SAFETY_NET);
            ORDERS_START_NANOS.set(System.nanoTime());
        }
        job.getJobExecutionResult().get();
        final long end = System.nanoTime();
        final double loadSeconds = (ORDERS_START_NANOS.get() - start) / 1e9;
        final double orderSeconds = (end - ORDERS_START_NANOS.get()) / 1e9;
        System.out.printf(Locale.ROOT, "products=%d loaded in %.1f s (job start included), changes=%d, orders=%d, "
                        + "matched=%d, parallelism=%d%n", products, loadSeconds, changes, orders, MATCHED.sum(),
                parallelism);
        System.out.printf(Locale.ROOT, "enriched=%d throughput=%.0f backend=%s%n", ENRICHED.sum(),
                ENRICHED.sum() / orderSeconds, backendName(backend));
        return new Summary(ENRICHED.sum(), MATCHED.sum());
    }

    /** The product order {@code i} asks for: one in 21 is not in the catalog. */
    static long orderedProduct(long i, long products) {
        return productId(orderedOrdinal(i, products));
    }

    /** The ordinal of the product order {@code i} asks for; those from {@code products} on are not in the catalog. */
    static long orderedOrdinal(long i, long products) {
        return Math.floorMod(i * 0x2545F4914F6CDD1DL, products + products / 20);
    }

    /** The product ordinals listed once every change is applied. */
    static BitSet listedAtTheEnd(long products) {
        final BitSet listed = new BitSet((int) products);
        listed.set(0, (int) products);
        for (long i = products; i < products + products / 10; i++) {
            listed.set((int) changedOrdinal(i, products), !withdraws(i));
        }
        return listed;
    }

    /** Product ids are spread over the key space, as hashed ids are. */
    static long productId(long ordinal) {
        return ordinal * 0x9E3779B97F4A7C15L;
    }

    static Product listing(long i) {
        return new Product(productId(i), "product-" + i, 100 + Math.floorMod(i * 7919, 100_000),
                CATEGORIES[(int) (i % CATEGORIES.length)], false);
    }

    /** Change {@code i}: a new price, every tenth a withdrawal. */
    static Product change(long i, long products) {
        final Product p = listing(changedOrdinal(i, products));
        p.priceCents = 100 + Math.floorMod(i * 104_729, 100_000);
        p.withdrawn = withdraws(i);
        return p;
    }

    /** The product ordinal change {@code i} changes. */
    private static long changedOrdinal(long i, long products) {
        return Math.floorMod(i * 0x9E3779B97F4A7C15L, products);
    }

    private static boolean withdraws(long change) {
        return change % 10 == 0;
    }

    private static final String[] CATEGORIES = {"books", "garden", "kitchen", "toys", "music", "tools"};

    /** Counts the enriched orders and prints the first few. */
    private static final class CountingSink implements Sink<Enriched<Order, Product>> {
        @Override
        public SinkWriter<Enriched<Order, Product>> createWriter(WriterInitContext context) {
            return new SinkWriter<>() {
                @Override
                public void write(Enriched<Order, Product> e, Context context) {
                    ENRICHED.increment();
                    if (e.payload != null) {
                        MATCHED.increment();
                    }
                    if (PRINTED.get() < 5 && PRINTED.getAndIncrement() < 5) {
                        System.out.println(e.event + " -> " + (e.payload == null ? "<no such product>" : e.payload));
                    }
                }

                @Override
                public void flush(boolean endOfInput) {
                }

                @Override
                public void close() {
                }
            };
        }
    }

    static String backendName(Backend requested) {
        try (FlixIndex probe = FlixIndex.open(FlixConfig.builder().backend(requested).threads(1).build())) {
            return probe.backend().name().toLowerCase(Locale.ROOT);
        }
    }
}
