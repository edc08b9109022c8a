package io.flix.examples;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.LookupKind;
import io.flix.index.Backend;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;
import org.apache.flink.util.Collector;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;

/**
 * FliX enrichment against what Flink users write today, in one local job per contestant at the same parallelism:
 * a product dimension of {@code --keys} keys (product id, price) is loaded, then {@code --lookups} orders look their
 * product up, half of them hits. The payload per key is the price ({@code --payload long}, the default) or a small
 * product record ({@code --payload product}: id, name, price, category).
 *
 * <ul>
 *   <li>{@code flix}: {@link FlixEnrichment} on the CPU backend (or {@code --backend}).</li>
 *   <li>{@code heap}: a {@link KeyedCoProcessFunction} with {@link ValueState} on HashMapStateBackend.</li>
 *   <li>{@code rocksdb}: the same on EmbeddedRocksDBStateBackend, with {@code --rocksdb-managed} managed memory
 *       (default 4g: with local mode's default it re-reads index blocks and collapses).</li>
 *   <li>{@code stateless}: the heap job without its state (updates dropped, orders out without a payload): what
 *       the sources, the key-by exchange and the record path cost alone, the ceiling of any keyed enrichment
 *       here. Not in the default contestants.</li>
 * </ul>
 * For each: the load rate (updates applied per second), live heap after the load (used heap after full GCs, all
 * else idle; RocksDB's state lives off the heap), the wall time of a savepoint of the loaded dimension, and the
 * lookup rate (orders enriched per second, from the first order to the end of the job). With each rate, the
 * process's CPU time per key loaded and per lookup over the same interval (all threads, JIT and GC included): on a
 * machine shared with other work it moves less than the rates. The orders wait until the
 * dimension is loaded, so the phases do not overlap. {@code --quick} runs tiny sizes in seconds (a smoke test).
 * {@code --warmup N} (default 10^6, at most {@code --keys}; 0 for none) first runs every contestant once with N keys
 * (printed, prefixed {@code warmup}), so that no contestant pays alone for compiling the Flink code all of them
 * share: measured on 2 cores, the first contestant of a cold JVM spent about 600 ns more CPU per lookup.
 * {@code --variants} chooses the contestants and their order, {@code --batch-size} and {@code --flush-ms} the FliX
 * operator's micro-batches (default 131072 records or 200 ms), {@code --object-reuse} turns Flink's object reuse on
 * for every contestant. Each line ends with the backend used: for FliX, as its subtasks reported it (their
 * {@code flixBackend} gauge).
 *
 * <pre>
 * java -Xmx8g -cp ... io.flix.examples.EnrichmentBenchmark --keys 10000000 --lookups 20000000 --parallelism 2
 * java -Xmx48g -cp ... io.flix.examples.EnrichmentBenchmark --keys 100000000 --parallelism 8 --backend gpu \
 *     --variants flix,heap --no-savepoint
 * </pre>
 * The second is the GPU run: 10^8 keys, the heap-state job beside it (about 100 bytes a key on the heap, 10 GB live
 * at 10^8, hence the larger heap); RocksDB needs its native library, left out where it is not on the class path.
 */
public final class EnrichmentBenchmark {

    /** One contestant's numbers. */
    public record Result(String variant, long keys, long lookups, long hits, double loadPerSecond,
                         double lookupsPerSecond, long liveHeapBytes, double savepointSeconds,
                         double loadCpuNanosPerKey, double lookupCpuNanosPerLookup, String backend) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT,
                    "%-8s keys=%d load=%.3f M/s lookups=%d hits=%d lookup=%.3f M/s liveHeap=%.1f MiB (%.0f B/key)"
                            + " savepoint=%.2f s cpu: load=%.0f ns/key lookup=%.0f ns backend=%s", variant, keys,
                    loadPerSecond / 1e6, lookups, hits, lookupsPerSecond / 1e6, liveHeapBytes / 1048576.0,
                    (double) liveHeapBytes / Math.max(1, keys), savepointSeconds, loadCpuNanosPerKey,
                    lookupCpuNanosPerLookup, backend);
        }
    }

    // The job runs in this JVM (local mode): its functions report here.
    // a LongAdder, not one contended counter, so that counting does not slow the subtasks down at high parallelism
    private static final LongAdder UPDATES_APPLIED = new LongAdder();
    private static final AtomicLong LOAD_START = new AtomicLong();
    private static final AtomicLong LOAD_END = new AtomicLong();
    private static final AtomicLong LOOKUP_START = new AtomicLong();
    // process CPU time (all threads, JIT and GC included) at the same moments
    private static final AtomicLong LOAD_START_CPU = new AtomicLong();
    private static final AtomicLong LOAD_END_CPU = new AtomicLong();
    private static final AtomicLong LOOKUP_START_CPU = new AtomicLong();
    private static final LongAdder ENRICHED = new LongAdder();
    private static final LongAdder HITS = new LongAdder();
    private static volatile CompletableFuture<Void> lookupsReleased;
    /**
     * The FliX operator's micro-batch size and flush interval ({@code --batch-size}, {@code --flush-ms}): batches
     * of 2^17 records cost about 30% less CPU per key loaded than 2^15 at 10^7 keys on 2 cores (each batch touches
     * more keys per index node); a lookup waits at most the interval.
     */
    private static volatile int flixBatchSize = 1 << 17;
    private static volatile long flixFlushMillis = 200;
    /** {@code --object-reuse}: Flink's object reuse for every contestant (no copy between chained operators). */
    private static volatile boolean objectReuse;

    private EnrichmentBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        final boolean quick = flag(args, "--quick");
        final long keys = option(args, "--keys", quick ? 20_000 : 10_000_000);
        final long lookups = option(args, "--lookups", quick ? 40_000 : 2 * keys);
        final int parallelism = (int) option(args, "--parallelism", 2);
        final String variants = text(args, "--variants", "flix,heap,rocksdb");
        final Backend backend = Backend.valueOf(text(args, "--backend", "cpu").toUpperCase(Locale.ROOT));
        final MemorySize rocksdbManaged = MemorySize.parse(text(args, "--rocksdb-managed", quick ? "256m" : "4g"));
        final boolean savepoint = !flag(args, "--no-savepoint");
        final String payload = text(args, "--payload", "long");
        System.out.printf(Locale.ROOT, "keys=%d lookups=%d (half hits) payload=%s parallelism=%d cores=%d "
                        + "maxHeap=%.1f GiB%n", keys, lookups, payload, parallelism, Runtime.getRuntime().availableProcessors(),
                Runtime.getRuntime().maxMemory() / 1073741824.0);
        flixBatchSize = (int) option(args, "--batch-size", flixBatchSize);
        flixFlushMillis = option(args, "--flush-ms", flixFlushMillis);
        objectReuse = flag(args, "--object-reuse");
        final long warmupKeys = option(args, "--warmup", quick ? 0 : Math.min(keys, 1_000_000));
        if (warmupKeys > 0) {
            // the JIT compiles Flink's code paths in whichever job runs them first: warm every contestant up
            for (String variant : variants.split(",")) {
                System.out.println("warmup " + run(variant.trim(), payload, warmupKeys, 2 * warmupKeys, parallelism,
                        backend, rocksdbManaged, false));
            }
        }
        for (String variant : variants.split(",")) {
            System.out.println(run(variant.trim(), payload, keys, lookups, parallelism, backend, rocksdbManaged,
                    savepoint));
        }
    }

    /** Runs one contestant's job and measures it. */
    public static Result run(String variant, String payload, long keys, long lookups, int parallelism,
                             Backend backend, MemorySize rocksdbManaged, boolean savepoint) throws Exception {
        UPDATES_APPLIED.reset();
        LOAD_START.set(0);
        LOAD_END.set(0);
        LOOKUP_START.set(0);
        LOAD_START_CPU.set(0);
        LOAD_END_CPU.set(0);
        LOOKUP_START_CPU.set(0);
        ENRICHED.reset();
        HITS.reset();
        lookupsReleased = new CompletableFuture<>();

        final Path checkpoints = Files.createTempDirectory("flix-bench-checkpoints");
        final Configuration conf = new Configuration();
        // savepoints of this size go to files, not to the job manager's memory
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());
        if (variant.equals("rocksdb")) {
            conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
            conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, rocksdbManaged);
        } else {
            conf.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        }
        // the FliX operator's backend gauge, as its subtasks report it
        conf.set(ConfigOptions.key("metrics.reporter.flixbackend.factory.class").stringType().noDefaultValue(),
                BackendReporter.class.getName());
        BackendReporter.BACKENDS.clear();
        conf.set(PipelineOptions.OBJECT_REUSE, objectReuse);
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
        final long space = 2 * keys; // ids beyond the dimension: half the orders miss
        final DataStream<Order> orders = env.fromSource(new DataGeneratorSource<>(
                        i -> new Order(i, productId(Math.floorMod(i * 0x2545F4914F6CDD1DL, space)), 1),
                        lookups, afterRelease(), TypeInformation.of(Order.class)),
                WatermarkStrategy.noWatermarks(), "orders");
        if (payload.equals("long")) {
            final DataStream<ProductPrice> updates = env.fromSource(new DataGeneratorSource<>(
                            i -> new ProductPrice(productId(i), 100 + Math.floorMod(i * 7919, 100_000)), keys,
                            TypeInformation.of(ProductPrice.class)),
                    WatermarkStrategy.noWatermarks(), "products");
            enrich(variant, updates, orders, p -> p.id, p -> p.price, Types.LONG, backend)
                    .sinkTo(new CountingSink<>()).name("count");
        } else if (payload.equals("product")) {
            final DataStream<Product> updates = env.fromSource(new DataGeneratorSource<>(
                            EnrichmentJob::listing, keys, TypeInformation.of(Product.class)),
                    WatermarkStrategy.noWatermarks(), "products");
            enrich(variant, updates, orders, p -> p.id, p -> p, TypeInformation.of(Product.class), backend)
                    .sinkTo(new CountingSink<>()).name("count");
        } else {
            throw new IllegalArgumentException("payload must be long or product: " + payload);
        }

        final JobClient job = env.executeAsync(variant);
        // the load ends when the last update has been applied: polled, at a resolution of about a millisecond
        while (UPDATES_APPLIED.sum() < keys) {
            if (job.getJobExecutionResult().isDone()) {
                job.getJobExecutionResult().get(); // throws where the job failed
                throw new IllegalStateException(variant + ": the job ended after " + UPDATES_APPLIED.sum() + " of "
                        + keys + " updates");
            }
            Thread.sleep(1);
        }
        LOAD_END.set(System.nanoTime());
        LOAD_END_CPU.set(processCpuNanos());
        Thread.sleep(flixFlushMillis + 250); // the last updates' micro-batch: flushed within the flush interval
        final long liveHeap = liveHeap();
        double savepointSeconds = Double.NaN;
        if (savepoint) {
            final Path dir = Files.createTempDirectory("flix-bench-savepoint");
            final long start = System.nanoTime();
            job.triggerSavepoint(dir.toUri().toString(), SavepointFormatType.CANONICAL).get(1, TimeUnit.HOURS);
            savepointSeconds = (System.nanoTime() - start) / 1e9;
            deleteRecursively(dir);
        }
        lookupsReleased.complete(null);
        job.getJobExecutionResult().get(1, TimeUnit.HOURS);
        final long end = System.nanoTime();
        final long endCpu = processCpuNanos();
        deleteRecursively(checkpoints);
        final double loadSeconds = (LOAD_END.get() - LOAD_START.get()) / 1e9;
        final double lookupSeconds = (end - LOOKUP_START.get()) / 1e9;
        if (ENRICHED.sum() != lookups) {
            throw new IllegalStateException(variant + ": " + ENRICHED.sum() + " of " + lookups + " lookups came out");
        }
        return new Result(variant, keys, lookups, HITS.sum(), keys / loadSeconds, lookups / lookupSeconds, liveHeap,
                savepointSeconds, (double) (LOAD_END_CPU.get() - LOAD_START_CPU.get()) / keys,
                (double) (endCpu - LOOKUP_START_CPU.get()) / lookups, backendUsed(variant));
    }

    /** The contestant's enrichment of the orders against the updates' payloads. */
    private static <U, P> DataStream<Enriched<Order, P>> enrich(
            String variant, DataStream<U> updates, DataStream<Order> orders, KeySelector<U, Long> key,
            SerializableFunction<U, P> payloadOf, TypeInformation<P> payloadType, Backend backend) {
        return switch (variant) {
            case "flix" -> FlixEnrichment.of(updates, orders)
                    .key(key, o -> o.productId)
                    .payload(u -> {
                        updateApplied();
                        return payloadOf.apply(u);
                    }, payloadType)
                    .batchSize(flixBatchSize)
                    .flushInterval(Duration.ofMillis(flixFlushMillis))
                    .backend(backend)
                    .build();
            case "heap", "rocksdb" -> keyedProcess(updates, orders, key,
                    new ValueStateEnrichment<>(payloadOf, payloadType), payloadType);
            case "stateless" -> keyedProcess(updates, orders, key, new StatelessPassThrough<U, P>(), payloadType);
            default -> throw new IllegalArgumentException(
                    "variant must be flix, heap, rocksdb or stateless: " + variant);
        };
    }

    /** The baselines' topology: both inputs keyed by the product id into one keyed co-process function. */
    private static <U, P> DataStream<Enriched<Order, P>> keyedProcess(
            DataStream<U> updates, DataStream<Order> orders, KeySelector<U, Long> key,
            KeyedCoProcessFunction<Long, U, Order, Enriched<Order, P>> function, TypeInformation<P> payloadType) {
        return updates.keyBy(key, Types.LONG)
                .connect(orders.keyBy(o -> o.productId, Types.LONG))
                .process(function, FlixEnrichment.enrichedType(TypeInformation.of(Order.class), payloadType));
    }

    /** A serializable function, for the payload of an update. */
    @FunctionalInterface
    interface SerializableFunction<T, R> extends java.io.Serializable {
        R apply(T t);
    }

    /** Product ids are spread over the key space, as hashed ids are. */
    static long productId(long ordinal) {
        return ordinal * 0x9E3779B97F4A7C15L;
    }

    private static void updateApplied() {
        if (LOAD_START.get() == 0 && LOAD_START.compareAndSet(0, System.nanoTime())) {
            LOAD_START_CPU.set(processCpuNanos());
        }
        UPDATES_APPLIED.increment();
    }

    /** The backends the FliX subtasks reported (joined where they differ); for the others their state backend. */
    private static String backendUsed(String variant) {
        if (variant.equals("stateless")) {
            return "none";
        }
        if (!variant.equals("flix")) {
            return variant.equals("rocksdb") ? "rocksdb" : "hashmap";
        }
        final java.util.TreeSet<String> names = new java.util.TreeSet<>();
        for (Gauge<?> gauge : BackendReporter.BACKENDS) {
            names.add(String.valueOf(gauge.getValue()));
        }
        return names.isEmpty() ? "unknown" : String.join("+", names);
    }

    /**
     * Keeps the FliX operator's {@code flixBackend} gauges, registered with the local cluster by
     * {@code metrics.reporter.flixbackend.factory.class} (and META-INF/services).
     */
    public static final class BackendReporter implements MetricReporter, MetricReporterFactory {
        static final java.util.Set<Gauge<?>> BACKENDS = java.util.concurrent.ConcurrentHashMap.newKeySet();

        @Override
        public MetricReporter createMetricReporter(java.util.Properties properties) {
            return new BackendReporter();
        }

        @Override
        public void open(MetricConfig config) {
        }

        @Override
        public void close() {
        }

        @Override
        public void notifyOfAddedMetric(Metric metric, String metricName, MetricGroup group) {
            if (metricName.equals("flixBackend") && metric instanceof Gauge<?> gauge) {
                BACKENDS.add(gauge);
            }
        }

        @Override
        public void notifyOfRemovedMetric(Metric metric, String metricName, MetricGroup group) {
            // kept: the job's gauges are read after it ends
        }
    }

    private static long processCpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static long liveHeap() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(200);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Holds the orders back, without blocking checkpoints, until the main thread releases them. */
    @SuppressWarnings("unchecked")
    private static RateLimiterStrategy<NumberSequenceSplit> afterRelease() {
        return parallelism -> new RateLimiter<NumberSequenceSplit>() {
            @Override
            public CompletionStage<Void> acquire(int permits) {
                final CompletableFuture<Void> released = lookupsReleased;
                if (released.isDone() && LOOKUP_START.compareAndSet(0, System.nanoTime())) {
                    LOOKUP_START_CPU.set(processCpuNanos());
                }
                return released;
            }
        };
    }

    /** A dimension row: a product and its price in cents. A Flink POJO. */
    public static class ProductPrice {
        public long id;
        public long price;

        public ProductPrice() {
        }

        public ProductPrice(long id, long price) {
            this.id = id;
            this.price = price;
        }
    }

    /** The baseline: exact lookups on keyed ValueState, one record at a time. */
    static final class ValueStateEnrichment<U, P> extends KeyedCoProcessFunction<Long, U, Order, Enriched<Order, P>> {
        private final SerializableFunction<U, P> payloadOf;
        private final TypeInformation<P> payloadType;
        private transient ValueState<P> payload;

        ValueStateEnrichment(SerializableFunction<U, P> payloadOf, TypeInformation<P> payloadType) {
            this.payloadOf = payloadOf;
            this.payloadType = payloadType;
        }

        @Override
        public void open(OpenContext openContext) {
            payload = getRuntimeContext().getState(new ValueStateDescriptor<>("payload", payloadType));
        }

        @Override
        public void processElement1(U update, Context ctx, Collector<Enriched<Order, P>> out) throws Exception {
            payload.update(payloadOf.apply(update));
            updateApplied();
        }

        @Override
        public void processElement2(Order order, Context ctx, Collector<Enriched<Order, P>> out) throws Exception {
            out.collect(new Enriched<>(order, LookupKind.EXACT, payload.value(), null, null));
        }
    }

    /**
     * The ceiling of any keyed enrichment in this job: the heap job's topology (sources, key-by exchange, the
     * record path, the sink) with the state taken out. Updates are counted and dropped; every order comes out
     * without a payload.
     */
    static final class StatelessPassThrough<U, P> extends KeyedCoProcessFunction<Long, U, Order, Enriched<Order, P>> {
        @Override
        public void processElement1(U update, Context ctx, Collector<Enriched<Order, P>> out) {
            updateApplied();
        }

        @Override
        public void processElement2(Order order, Context ctx, Collector<Enriched<Order, P>> out) {
            out.collect(new Enriched<>(order, LookupKind.EXACT, null, null, null));
        }
    }

    private static final class CountingSink<P> implements Sink<Enriched<Order, P>> {
        @Override
        public SinkWriter<Enriched<Order, P>> createWriter(WriterInitContext context) {
            return new SinkWriter<>() {
                @Override
                public void write(Enriched<Order, P> e, Context context) {
                    ENRICHED.increment();
                    if (e.payload != null) {
                        HITS.increment();
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

    private static void deleteRecursively(Path dir) throws java.io.IOException {
        final List<Path> paths = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.forEach(paths::add);
        }
        paths.sort(Comparator.reverseOrder());
        for (Path p : paths) {
            Files.deleteIfExists(p);
        }
    }

    private static boolean flag(String[] args, String name) {
        for (String a : args) {
            if (a.equals(name)) {
                return true;
            }
        }
        return false;
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
