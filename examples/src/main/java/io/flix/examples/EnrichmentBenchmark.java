package io.flix.examples;

import static io.flix.examples.BenchmarkProgress.checkAnswers;
import static io.flix.examples.BenchmarkProgress.functionsOpened;
import static io.flix.examples.BenchmarkProgress.hits;
import static io.flix.examples.BenchmarkProgress.flixUpdateSeen;
import static io.flix.examples.BenchmarkProgress.loadStartCpuNanos;
import static io.flix.examples.BenchmarkProgress.loadStartNanos;
import static io.flix.examples.BenchmarkProgress.lookupStartCpuNanos;
import static io.flix.examples.BenchmarkProgress.lookupStartNanos;
import static io.flix.examples.BenchmarkProgress.processCpuNanos;
import static io.flix.examples.BenchmarkProgress.releaseLookups;
import static io.flix.examples.BenchmarkProgress.resetProgress;
import static io.flix.examples.BenchmarkProgress.updatesApplied;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.FlushPolicy;
import io.flix.index.Backend;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction;
import org.apache.flink.streaming.api.functions.co.KeyedCoProcessFunction;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * FliX enrichment against what Flink users write today, in one local job per contestant at the same parallelism:
 * a product dimension of {@code --keys} keys (product id, price) is loaded, then {@code --lookups} orders look their
 * product up, half of them hits. The payload per key is the price ({@code --payload long}, the default) or a small
 * product record ({@code --payload product}: id, name, price, category).
 *
 * <p>The contestants ({@code --variants}, all by default, in this order; a FliX contestant runs on each backend of
 * {@code --backend}, or on the one its name gives, as in {@code flix-shared/gpu}):
 * <ul>
 *   <li>{@code flix-shared}: {@link FlixEnrichment#shared}: the whole dimension once per task manager, updates
 *       broadcast to its writers, lookups answered by an operator chained to their source (no key-by).</li>
 *   <li>{@code flix-keyed}: {@link FlixEnrichment#of}: both inputs keyed, a slice of the dimension per subtask.</li>
 *   <li>{@code broadcast}: Flink's own replicated dimension: a {@link BroadcastProcessFunction} whose broadcast
 *       state (a map) holds the whole dimension, one copy per subtask; updates broadcast, lookups not keyed. Flink
 *       chains no operator of two inputs to its upstream, so the lookups reach it through a forward exchange (one
 *       to one, in the same slot, serialized but not shuffled).</li>
 *   <li>{@code heap}: a {@link KeyedCoProcessFunction} with {@link ValueState} on HashMapStateBackend.</li>
 *   <li>{@code rocksdb}: the same on EmbeddedRocksDBStateBackend, with {@code --rocksdb-managed} managed memory
 *       (default 4g: with local mode's default it re-reads index blocks and collapses); {@code --rocksdb-lookups}
 *       gives it fewer lookups than the others, where its slow lookups would take too long.</li>
 *   <li>{@code ceiling-keyed}: the heap job's topology (both inputs keyed into a {@link KeyedCoProcessFunction})
 *       without state: updates dropped, every order out without a payload. The most any keyed enrichment can do in
 *       this job.</li>
 *   <li>{@code ceiling-chained}: lookups chained to their source into a map that answers nothing (every order out
 *       without a payload), updates broadcast to every subtask and dropped. The most any enrichment whose lookups
 *       stay chained (the shared mode) can do in this job.</li>
 * </ul>
 * The FliX contestants run once per backend of {@code --backend} (a list; default {@code cpu}, and {@code gpu}
 * where a GPU is usable). {@code --object-reuse off|on|both} (a bare {@code --object-reuse} is {@code on}) runs
 * every contestant with Flink's object reuse off, on, or each both ways.
 *
 * <p>For each run: the load rate (updates of the dimension applied per second), the live heap after the load (used
 * heap after full GCs, all else idle; RocksDB's state lives off the heap, the GPU index in device memory), for FliX
 * the index's bytes (device memory on the GPU; from its {@code flixIndexBytes} gauge, summed over the indexes of the
 * job: one per subtask in the keyed mode, one per task manager in the shared mode), the wall time and size of a
 * savepoint of the loaded dimension, and the lookup rate (orders enriched per second, from the first order to the
 * end of the job). With each rate, the process's CPU time per key loaded and per lookup over the same interval (all
 * threads, JIT and GC included): on a machine shared with other work it moves less than the rates.
 *
 * <p>The orders are held back at their source until the dimension is loaded, so the phases do not overlap. The load
 * ends when every subtask that holds a copy of the dimension holds all of it: for the FliX contestants when their
 * {@code flixIndexSize} gauges say so (keyed: the subtasks' sizes add up to the key count; shared: every writer
 * subtask's dimension holds every key), for the others when their functions have applied every update (on every
 * subtask, where updates are broadcast). Every answer is checked against the dimension at the sink: a contestant
 * that keeps state must answer every order with its product's price or, where the product is not in the dimension,
 * nothing; a run with a wrong answer fails, naming it.
 *
 * <p>{@code --restore} also measures how the loaded dimension recovers, for the contestants that keep state (all but
 * the ceilings); each job runs on a local cluster of its own ({@link LocalJob}), as a local environment runs it.
 * <ul>
 *   <li>The checkpoint pause: once the dimension is loaded (and before the savepoint), a full checkpoint is taken.
 *       Its pause is the longest synchronous part of the checkpoint on any subtask of the tasks that hold the
 *       dimension (Flink's "sync duration" in its checkpoint statistics: the task processes nothing meanwhile); the
 *       same measure for every contestant. FliX writes its dimension there (the keyed operator its key groups, the
 *       shared mode's writer the one copy), so the pause grows with the dimension; Flink's heap backends write their
 *       state after it, in the asynchronous part, and only prepare it there (a copy-on-write view of the keyed state
 *       tables; a copy of each broadcast state map). For FliX the run's line also gives the operators' own
 *       {@code flixSnapshotMillis} gauge (the write alone, the longest of its subtasks): part of the pause. With it,
 *       the checkpoint's duration (trigger to the last acknowledgement) and its state size. {@code --checkpoint}
 *       takes the checkpoint without the restores.</li>
 *   <li>The restore time: after the lookups, the job is started again from the run's savepoint (a checkpoint is
 *       discarded when its job finishes, and the lookups come first), at the same parallelism and at each of
 *       {@code --restore-parallelism} (a list; it implies {@code --restore}). The time runs from the job's
 *       submission (its cluster already started) until every subtask that holds the dimension holds its restored
 *       part: for FliX when the {@code flixIndexSize} gauges say so, as for the load; for the others when every
 *       subtask of their function has opened (Flink opens a function after restoring its state). Then
 *       {@code --restore-lookups} orders (default 10^5, at most {@code --lookups}), from an order source of the
 *       restored job's own, are released and every answer is checked; a restored job that applies an update (its
 *       dimension did not come from the savepoint alone) fails the run. {@code --savepoint-format canonical|native}
 *       (default canonical) sets the savepoint's format: FliX's state is the same in both and Flink's heap backends
 *       read every entry back from either; RocksDB restores a native savepoint from its files, a canonical one by
 *       writing every entry again.</li>
 * </ul>
 *
 * <p>{@code --warmup N} (default 10^6, at most {@code --keys}; 0 for none) first runs every contestant once with N
 * keys (printed, prefixed {@code warmup}), so that no contestant pays alone for compiling the Flink code all of
 * them share: measured on 2 cores, the first contestant of a cold JVM spent about 600 ns more CPU per lookup.
 * {@code --repeat N} runs all contestants N times, round after round; the table at the end gives the medians, with
 * ratios against the heap-state job, the two ceilings and the broadcast-state job (each of the same object-reuse
 * setting). {@code --batch-size} and {@code --flush-ms} set the FliX operators' micro-batches (default 131072
 * records or 200 ms), {@code --flush-policy load|timer} when they go to the index (default load, FlixEnrichment's
 * default), {@code --update-batch-max N} the shared writer's largest batch under LOAD (default 0: FliX's choice,
 * 2^22 on the CPU with 8 cores or more, else 2^21), {@code --threads N} the CPU backend's threads of each FliX index
 * (default 0: FliX's own choice), {@code --exact-key-table off} leaves out the CPU backend's exact-key table
 * (default on), {@code --no-savepoint} skips the savepoints, {@code --quick} runs tiny sizes in seconds. Give the
 * JVM its whole heap up front ({@code -Xms} equal to {@code -Xmx}, {@code -XX:+AlwaysPreTouch}): with a heap that
 * grew and shrank between the rounds, the shared mode's lookups on 2 cores moved between 3.0 and 14.5 M/s from round
 * to round.
 *
 * <pre>
 * java -Xms10g -Xmx10g -XX:+AlwaysPreTouch -cp ... io.flix.examples.EnrichmentBenchmark --keys 10000000 --lookups 20000000 --parallelism 2 \
 *     --object-reuse both --rocksdb-lookups 2000000
 * java -Xmx64g -cp ... io.flix.examples.EnrichmentBenchmark --keys 100000000 --parallelism 8 --backend gpu \
 *     --variants flix-shared,flix-keyed,heap,ceiling-keyed,ceiling-chained --no-savepoint
 * java -Xmx10g -cp ... io.flix.examples.EnrichmentBenchmark --keys 10000000 --lookups 10000000 --parallelism 2 \
 *     --variants flix-shared,flix-keyed,heap,broadcast --restore --restore-parallelism 3
 * </pre>
 * The second is the GPU run: 10^8 keys, the heap-state job beside it (about 100 bytes a key on the heap, 10 GB live
 * at 10^8, hence the larger heap; the broadcast-state job holds a copy of that per subtask). RocksDB needs its native
 * library, left out where it is not on the class path. The third measures the checkpoint pause and the restore at
 * the job's parallelism and at 3.
 */
public final class EnrichmentBenchmark {

    /** The contestants' kinds, in the default order. */
    public static final List<String> KINDS = List.of("flix-shared", "flix-keyed", "broadcast", "heap", "rocksdb",
            "ceiling-keyed", "ceiling-chained");

    /** The enrichment operator's name in every job (FliX reports its gauges under it). */
    private static final String ENRICHMENT = "enrichment";
    /** The shared mode's writer operator, as {@link FlixEnrichment} names it. */
    private static final String DIMENSION_WRITER = ENRICHMENT + ": dimension";

    /** A contestant: its kind (one of {@link #KINDS}) and, for the FliX kinds, the index backend. */
    public record Contestant(String kind, Backend backend) {
        public Contestant {
            if (!KINDS.contains(kind)) {
                throw new IllegalArgumentException("a contestant is one of " + KINDS + ", not '" + kind + "'");
            }
            if (kind.startsWith("flix-") != (backend != null)) {
                throw new IllegalArgumentException("a backend is given for the FliX contestants only: " + kind
                        + " with " + backend);
            }
        }

        /** A contestant without an index backend (all but the FliX ones). */
        public static Contestant of(String kind) {
            return new Contestant(kind, null);
        }

        boolean flix() {
            return backend != null;
        }

        /** Whether it keeps no state (answers nothing). */
        boolean ceiling() {
            return kind.startsWith("ceiling-");
        }

        /** Whether every subtask receives every update (broadcast), rather than one subtask each. */
        boolean updatesBroadcast() {
            return kind.equals("broadcast") || kind.equals("ceiling-chained");
        }

        public String label() {
            return flix() ? kind + "/" + backend.name().toLowerCase(Locale.ROOT) : kind;
        }
    }

    /**
     * What is measured of the loaded dimension's recovery, for the contestants that keep state: {@code checkpoint},
     * a checkpoint of it (its pause, duration and size); {@code restoreParallelisms}, the parallelisms the job is
     * started again at from the run's savepoint (none: no restore), each restored job answering
     * {@code sampleLookups} orders, every answer checked.
     */
    public record Recovery(boolean checkpoint, List<Integer> restoreParallelisms, long sampleLookups) {
        /** Nothing measured. */
        public static final Recovery NONE = new Recovery(false, List.of(), 0);

        public Recovery {
            restoreParallelisms = List.copyOf(restoreParallelisms);
            if (restoreParallelisms.stream().anyMatch(p -> p < 1)) {
                throw new IllegalArgumentException("restore parallelisms must be >= 1: " + restoreParallelisms);
            }
            if (!restoreParallelisms.isEmpty() && sampleLookups < 1) {
                throw new IllegalArgumentException("a restored job answers at least one lookup, not "
                        + sampleLookups);
            }
        }

        /** The checkpoint, and a restore at each of {@code parallelisms} answering {@code sampleLookups} orders. */
        public static Recovery restoreAt(List<Integer> parallelisms, long sampleLookups) {
            return new Recovery(true, parallelisms, sampleLookups);
        }

        boolean restores() {
            return !restoreParallelisms.isEmpty();
        }
    }

    /**
     * The sizes and settings of a run. {@code batchSize} and {@code flushMillis}: the FliX operators' micro-batches;
     * batches of 2^17 records cost about 30% less CPU per key loaded than 2^15 at 10^7 keys on 2 cores (each batch
     * touches more keys per index node); {@code flushPolicy}: when a batch goes to the index (LOAD, the builder's
     * default: at once when the index is idle, else when the call in flight completes; TIMER: on size or interval).
     * A restore starts from the savepoint, so {@code recovery} with restores needs {@code savepoint}.
     */
    public record Setup(String payload, long keys, long lookups, int parallelism, boolean objectReuse,
                        boolean savepoint, SavepointFormatType savepointFormat, MemorySize rocksdbManaged,
                        int batchSize, long flushMillis, Recovery recovery, int flixThreads,
                        boolean flixExactKeyTable, FlushPolicy flushPolicy, int updateBatchMax) {
        public Setup {
            if (updateBatchMax < 0) {
                throw new IllegalArgumentException("the shared writer's batch maximum must be >= 0 (0: FliX's "
                        + "choice), was " + updateBatchMax);
            }
            if (flushPolicy == null) {
                throw new IllegalArgumentException("the flush policy is required");
            }
            if (flixThreads < 0) {
                throw new IllegalArgumentException("the FliX threads must be >= 0 (0: the default), were "
                        + flixThreads);
            }
            if (!payload.equals("long") && !payload.equals("product")) {
                throw new IllegalArgumentException("payload must be long or product: " + payload);
            }
            if (keys < 1 || lookups < 1 || parallelism < 1) {
                throw new IllegalArgumentException("keys, lookups and parallelism must be >= 1, were " + keys + ", "
                        + lookups + " and " + parallelism);
            }
            if (recovery.restores() && !savepoint) {
                throw new IllegalArgumentException("a restore starts from the run's savepoint: restores at "
                        + recovery.restoreParallelisms() + " need the savepoint taken");
            }
        }

        /**
         * Object reuse off, canonical savepoints on, RocksDB with 4g of managed memory, micro-batches of 2^17 or
         * 200 ms that follow the load, no recovery measured.
         */
        public static Setup of(String payload, long keys, long lookups, int parallelism) {
            return new Setup(payload, keys, lookups, parallelism, false, true, SavepointFormatType.CANONICAL,
                    MemorySize.parse("4g"), 1 << 17, 200, Recovery.NONE, 0, true, FlushPolicy.LOAD, 0);
        }

        public Setup withObjectReuse(boolean reuse) {
            return new Setup(payload, keys, lookups, parallelism, reuse, savepoint, savepointFormat, rocksdbManaged,
                    batchSize, flushMillis, recovery, flixThreads, flixExactKeyTable, flushPolicy, updateBatchMax);
        }

        public Setup withSavepoint(boolean take) {
            return new Setup(payload, keys, lookups, parallelism, objectReuse, take, savepointFormat, rocksdbManaged,
                    batchSize, flushMillis, recovery, flixThreads, flixExactKeyTable, flushPolicy, updateBatchMax);
        }

        public Setup withSavepointFormat(SavepointFormatType format) {
            return new Setup(payload, keys, lookups, parallelism, objectReuse, savepoint, format, rocksdbManaged,
                    batchSize, flushMillis, recovery, flixThreads, flixExactKeyTable, flushPolicy, updateBatchMax);
        }

        public Setup withRocksdbManaged(MemorySize managed) {
            return new Setup(payload, keys, lookups, parallelism, objectReuse, savepoint, savepointFormat, managed,
                    batchSize, flushMillis, recovery, flixThreads, flixExactKeyTable, flushPolicy, updateBatchMax);
        }

        public Setup withSizes(long dimensionKeys, long orderLookups) {
            return new Setup(payload, dimensionKeys, orderLookups, parallelism, objectReuse, savepoint,
                    savepointFormat, rocksdbManaged, batchSize, flushMillis, recovery, flixThreads,
                    flixExactKeyTable, flushPolicy, updateBatchMax);
        }

        public Setup withBatches(int records, long millis) {
            return new Setup(payload, keys, lookups, parallelism, objectReuse, savepoint, savepointFormat,
                    rocksdbManaged, records, millis, recovery, flixThreads, flixExactKeyTable, flushPolicy, updateBatchMax);
        }

        /** CPU backend threads of each FliX index (IndexSettings' threads; 0: its default). */
        public Setup withFlixThreads(int threads) {
            return new Setup(payload, keys, lookups, parallelism, objectReuse, savepoint, savepointFormat,
                    rocksdbManaged, batchSize, flushMillis, recovery, threads, flixExactKeyTable, flushPolicy, updateBatchMax);
        }

        /** Whether each FliX index on the CPU keeps its exact-key table (IndexSettings' exactKeyTable). */
        public Setup withFlixExactKeyTable(boolean kept) {
            return new Setup(payload, keys, lookups, parallelism, objectReuse, savepoint, savepointFormat,
                    rocksdbManaged, batchSize, flushMillis, recovery, flixThreads, kept, flushPolicy, updateBatchMax);
        }

        /** When the FliX operators' micro-batches go to the index (FlixEnrichment's flushPolicy; LOAD by default). */
        public Setup withFlushPolicy(FlushPolicy policy) {
            return new Setup(payload, keys, lookups, parallelism, objectReuse, savepoint, savepointFormat,
                    rocksdbManaged, batchSize, flushMillis, recovery, flixThreads, flixExactKeyTable, policy, updateBatchMax);
        }

        /** The shared writer's largest batch under LOAD (FlixEnrichment's updateBatchMax). */
        public Setup withUpdateBatchMax(int updates) {
            return new Setup(payload, keys, lookups, parallelism, objectReuse, savepoint, savepointFormat,
                    rocksdbManaged, batchSize, flushMillis, recovery, flixThreads, flixExactKeyTable, flushPolicy,
                    updates);
        }

        public Setup withRecovery(Recovery measured) {
            return new Setup(payload, keys, lookups, parallelism, objectReuse, savepoint, savepointFormat,
                    rocksdbManaged, batchSize, flushMillis, measured, flixThreads, flixExactKeyTable, flushPolicy, updateBatchMax);
        }
    }

    /**
     * A checkpoint of the loaded dimension. {@code pauseMillis}: the longest synchronous part of the checkpoint on a
     * subtask of the tasks that hold the dimension (Flink's sync duration: the task processes nothing meanwhile);
     * {@code flixWriteMillis}: for FliX, the longest its operators took to write the dimension (their
     * {@code flixSnapshotMillis} gauges; part of the pause), else -1; {@code seconds}: from trigger to the last
     * acknowledgement; {@code bytes}: the checkpoint's state size.
     */
    public record Checkpoint(long pauseMillis, long flixWriteMillis, double seconds, long bytes) {
        /** No checkpoint taken. */
        public static final Checkpoint NONE = new Checkpoint(-1, -1, Double.NaN, -1);

        public boolean taken() {
            return !Double.isNaN(seconds);
        }

        @Override
        public String toString() {
            return !taken() ? "-" : String.format(Locale.ROOT, "%.2f s (%d bytes, pause %d ms%s)", seconds, bytes,
                    pauseMillis, flixWriteMillis < 0 ? "" : ", FliX write " + flixWriteMillis + " ms");
        }
    }

    /**
     * A restore of the loaded dimension from the savepoint at {@code parallelism}: {@code seconds} from submitting
     * the job (to a started cluster) until every subtask holding the dimension holds its restored part;
     * {@code lookups} orders then answered, {@code hits} of them with a payload, every answer checked.
     */
    public record Restore(int parallelism, double seconds, long lookups, long hits) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT, "p=%d %.2f s", parallelism, seconds);
        }
    }

    /**
     * One run's numbers. {@code indexBytes}: the FliX indexes' bytes once loaded (device memory on the GPU), -1
     * where not known; {@code savepointSeconds} and {@code savepointBytes}: NaN and -1 where no savepoint was taken;
     * {@code checkpoint}: {@link Checkpoint#NONE} where none was taken; {@code restores}: one per restore
     * parallelism, none where not measured.
     */
    public record Result(Contestant contestant, boolean objectReuse, String backend, long keys, long lookups,
                         long hits, double loadPerSecond, double lookupsPerSecond, long liveHeapBytes,
                         long indexBytes, double savepointSeconds, long savepointBytes, double loadCpuNanosPerKey,
                         double lookupCpuNanosPerLookup, Checkpoint checkpoint, List<Restore> restores) {
        public Result {
            restores = List.copyOf(restores);
        }

        @Override
        public String toString() {
            return String.format(Locale.ROOT,
                    "%-22s reuse=%-3s keys=%d load=%.3f M/s lookups=%d hits=%d lookup=%.3f M/s liveHeap=%.1f MiB"
                            + " (%.0f B/key) index=%s savepoint=%s cpu: load=%.0f ns/key lookup=%.0f ns backend=%s"
                            + "%s%s",
                    contestant.label(), objectReuse ? "on" : "off", keys, loadPerSecond / 1e6, lookups, hits,
                    lookupsPerSecond / 1e6, liveHeapBytes / 1048576.0, (double) liveHeapBytes / keys,
                    indexBytes < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f MiB (%.1f B/key)",
                            indexBytes / 1048576.0, (double) indexBytes / keys),
                    Double.isNaN(savepointSeconds) ? "-" : String.format(Locale.ROOT, "%.2f s (%d bytes)",
                            savepointSeconds, savepointBytes),
                    loadCpuNanosPerKey, lookupCpuNanosPerLookup, backend,
                    checkpoint.taken() ? " checkpoint=" + checkpoint : "",
                    restores.isEmpty() ? "" : " restore=" + restores);
        }
    }

    /** Product ids are the ordinals times an odd constant (spread over the key space, as hashed ids are)... */
    private static final long PRODUCT_ID_FACTOR = 0x9E3779B97F4A7C15L;
    /** ...so an id times this inverse (modulo 2^64) is its ordinal again: how the sink checks each answer. */
    private static final long ORDINAL_FACTOR = inverse(PRODUCT_ID_FACTOR);

    private EnrichmentBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        final Args options = Args.of(args);
        final boolean quick = options.flag("--quick");
        final long keys = options.number("--keys", quick ? 20_000 : 10_000_000);
        final long lookups = options.number("--lookups", quick ? 40_000 : 2 * keys);
        final long rocksdbLookups = options.number("--rocksdb-lookups", lookups);
        final int parallelism = (int) options.number("--parallelism", 2);
        final String gpuUnusable = Backend.GPU.unavailableReason();
        final List<Backend> backends = new ArrayList<>();
        for (String name : options.text("--backend", gpuUnusable == null ? "cpu,gpu" : "cpu").split(",")) {
            backends.add(Backend.valueOf(name.trim().toUpperCase(Locale.ROOT)));
        }
        final List<Contestant> contestants = contestants(options, backends);
        final List<Boolean> reuseSettings = switch (options.textOr("--object-reuse", "on", "off")) {
            case "off" -> List.of(false);
            case "on" -> List.of(true);
            case "both" -> List.of(false, true);
            default -> throw new IllegalArgumentException("--object-reuse takes off, on or both, not '"
                    + options.textOr("--object-reuse", "on", "off") + "'");
        };
        final int repeat = (int) options.number("--repeat", 1);
        final Setup setup = Setup.of(options.text("--payload", "long"), keys, lookups, parallelism)
                .withSavepoint(!options.flag("--no-savepoint"))
                .withSavepointFormat(SavepointFormatType.valueOf(
                        options.text("--savepoint-format", "canonical").toUpperCase(Locale.ROOT)))
                .withRocksdbManaged(MemorySize.parse(options.text("--rocksdb-managed", quick ? "256m" : "4g")))
                .withBatches((int) options.number("--batch-size", 1 << 17), options.number("--flush-ms", 200))
                .withFlushPolicy(flushPolicy(options))
                .withUpdateBatchMax((int) options.number("--update-batch-max", 0))
                .withFlixThreads((int) options.number("--threads", 0))
                .withFlixExactKeyTable(switch (options.text("--exact-key-table", "on")) {
                    case "on" -> true;
                    case "off" -> false;
                    default -> throw new IllegalArgumentException("--exact-key-table takes on or off, not '"
                            + options.text("--exact-key-table", "on") + "'");
                })
                .withRecovery(recovery(options, parallelism, lookups));
        System.out.printf(Locale.ROOT, "keys=%d lookups=%d (rocksdb: %d; half hits) payload=%s parallelism=%d "
                        + "cores=%d maxHeap=%.1f GiB batch=%d flush=%d ms flixThreads=%d exactKeyTable=%s repeat=%d "
                        + "gpu=%s%n", keys,
                lookups, rocksdbLookups, setup.payload(), parallelism, Runtime.getRuntime().availableProcessors(),
                Runtime.getRuntime().maxMemory() / 1073741824.0, setup.batchSize(), setup.flushMillis(),
                setup.flixThreads(), setup.flixExactKeyTable() ? "on" : "off", repeat,
                gpuUnusable == null ? "usable" : gpuUnusable.lines().findFirst().orElse(gpuUnusable));
        if (setup.recovery().checkpoint()) {
            System.out.println("checkpoint of the loaded dimension");
        }
        if (setup.recovery().restores()) {
            System.out.printf(Locale.ROOT, "restores from the %s savepoint at parallelism %s, %d lookups each%n",
                    setup.savepointFormat().name().toLowerCase(Locale.ROOT), setup.recovery().restoreParallelisms(),
                    setup.recovery().sampleLookups());
        }
        final long warmupKeys = options.number("--warmup", quick ? 0 : Math.min(keys, 1_000_000));
        if (warmupKeys > 0) {
            // the JIT compiles Flink's code paths in whichever job runs them first: warm every contestant up
            for (boolean reuse : reuseSettings) {
                for (Contestant contestant : contestants) {
                    System.out.println("warmup " + run(contestant, setup.withObjectReuse(reuse)
                            .withSavepoint(setup.recovery().restores()).withSizes(warmupKeys, 2 * warmupKeys)));
                }
            }
        }
        final List<Result> results = new ArrayList<>();
        for (int round = 0; round < repeat; round++) {
            for (boolean reuse : reuseSettings) {
                for (Contestant contestant : contestants) {
                    final Setup runSetup = setup.withObjectReuse(reuse).withSizes(keys,
                            contestant.kind().equals("rocksdb") ? rocksdbLookups : lookups);
                    final Result result = run(contestant, runSetup);
                    System.out.println(result);
                    results.add(result);
                }
            }
        }
        System.out.println();
        System.out.print(EnrichmentTable.of(results));
    }

    /**
     * {@code --checkpoint}, {@code --restore}, {@code --restore-parallelism} and {@code --restore-lookups}: see the
     * class comment.
     */
    private static Recovery recovery(Args options, int parallelism, long lookups) {
        final String others = options.text("--restore-parallelism", null);
        if (!options.flag("--restore") && others == null) {
            return options.flag("--checkpoint") ? new Recovery(true, List.of(), 0) : Recovery.NONE;
        }
        final List<Integer> parallelisms = new ArrayList<>(List.of(parallelism));
        if (others != null) {
            for (String p : others.split(",")) {
                final int other = Integer.parseInt(p.trim());
                if (!parallelisms.contains(other)) {
                    parallelisms.add(other);
                }
            }
        }
        return Recovery.restoreAt(parallelisms, options.number("--restore-lookups", Math.min(lookups, 100_000)));
    }

    /**
     * Runs one contestant's job and measures it, then restores it where the setup says; fails where an answer is
     * wrong or a lookup is missing.
     */
    public static Result run(Contestant contestant, Setup setup) throws Exception {
        resetProgress();
        final long keys = setup.keys();
        final boolean recover = !contestant.ceiling(); // the ceilings keep no state
        final Path checkpoints = Files.createTempDirectory("flix-bench-checkpoints");
        final Path savepoints = Files.createTempDirectory("flix-bench-savepoint");
        try {
            final Configuration conf = configuration(contestant, setup, checkpoints);
            final long loadStart;
            final long loadEnd;
            final long loadEndCpu;
            final long lookupStart;
            final long end;
            final long endCpu;
            final String backend;
            final long liveHeap;
            final long indexBytes;
            Checkpoint checkpoint = Checkpoint.NONE;
            double savepointSeconds = Double.NaN;
            long savepointBytes = -1;
            String savepoint = null;
            try (LocalJob job = LocalJob.start(environment(contestant, setup, conf, setup.parallelism(), "orders",
                    setup.lookups()), conf, contestant.label(), null)) {
                final JobClient client = job.client();
                // the load ends when every copy of the dimension holds it all: polled, at a resolution of about a
                // millisecond
                while (!loaded(contestant, setup)) {
                    if (client.getJobExecutionResult().isDone()) {
                        client.getJobExecutionResult().get(); // throws where the job failed
                        throw new IllegalStateException(contestant.label() + ": the job ended before the dimension "
                                + "was loaded (" + updatesApplied() + " updates applied, " + keys + " keys)");
                    }
                    Thread.sleep(1);
                }
                loadEnd = System.nanoTime();
                loadEndCpu = processCpuNanos();
                // while the job runs: the shared mode's gauges read its index, which is closed when the job ends
                // (a gauge read after the end keeps the value of the last refresh, which can trail the last batches)
                backend = backendUsed(contestant);
                indexBytes = indexBytes(contestant, setup.parallelism());
                liveHeap = LiveHeap.bytes();
                if (setup.recovery().checkpoint() && recover) {
                    final LocalJob.CheckpointStats stats = job.checkpoint(ENRICHMENT);
                    checkpoint = new Checkpoint(stats.pauseMillis(), flixSnapshotMillis(contestant), stats.seconds(),
                            stats.bytes());
                }
                if (setup.savepoint()) {
                    final long start = System.nanoTime();
                    savepoint = client.triggerSavepoint(savepoints.toUri().toString(), setup.savepointFormat())
                            .get(1, TimeUnit.HOURS);
                    savepointSeconds = (System.nanoTime() - start) / 1e9;
                    savepointBytes = bytesUnder(savepoints);
                }
                releaseLookups();
                client.getJobExecutionResult().get(1, TimeUnit.HOURS);
                end = System.nanoTime();
                endCpu = processCpuNanos();
                loadStart = loadStartNanos();
                lookupStart = lookupStartNanos();
            }
            checkAnswers(contestant.label(), setup.lookups(), contestant.ceiling());
            if (contestant.flix()) {
                printLookupBatches(contestant);
            }
            final long hits = hits();
            final double loadCpuPerKey = (double) (loadEndCpu - loadStartCpuNanos()) / keys;
            final double lookupCpuPerLookup = (double) (endCpu - lookupStartCpuNanos()) / setup.lookups();
            final List<Restore> restores = new ArrayList<>();
            if (recover) {
                for (int parallelism : setup.recovery().restoreParallelisms()) {
                    restores.add(restore(contestant, setup, conf, savepoint, parallelism));
                }
            }
            final double loadSeconds = (loadEnd - loadStart) / 1e9;
            final double lookupSeconds = (end - lookupStart) / 1e9;
            return new Result(contestant, setup.objectReuse(), backend, keys, setup.lookups(), hits,
                    keys / loadSeconds, setup.lookups() / lookupSeconds, liveHeap, indexBytes, savepointSeconds,
                    savepointBytes, loadCpuPerKey, lookupCpuPerLookup, checkpoint, restores);
        } finally {
            deleteRecursively(checkpoints);
            deleteRecursively(savepoints);
        }
    }

    /**
     * Starts the contestant's job again from {@code savepoint} at {@code parallelism}, with orders of its own (the
     * sample, held back until the dimension is restored) in place of the first job's, and measures the time from
     * its submission until every subtask that holds the dimension holds its restored part; then checks every answer
     * to the sample. The updates' source is restored as the first job left it, done: the dimension must come from
     * the savepoint alone, and a restored job that applies an update fails the run.
     */
    private static Restore restore(Contestant contestant, Setup setup, Configuration conf, String savepoint,
                                   int parallelism) throws Exception {
        resetProgress();
        final long lookups = setup.recovery().sampleLookups();
        final String label = contestant.label() + " restored at parallelism " + parallelism;
        // the first job's garbage is not the restore's to collect
        System.gc();
        final double seconds;
        try (LocalJob job = LocalJob.start(environment(contestant, setup, conf, parallelism, "orders after restore",
                lookups), conf, label, savepoint)) {
            final JobClient client = job.client();
            while (!restored(contestant, setup.keys(), parallelism)) {
                if (client.getJobExecutionResult().isDone()) {
                    client.getJobExecutionResult().get(); // throws where the job failed
                    throw new IllegalStateException(label + ": the job ended before its dimension was restored");
                }
                Thread.sleep(1);
            }
            seconds = (System.nanoTime() - job.submittedNanos()) / 1e9;
            releaseLookups();
            client.getJobExecutionResult().get(1, TimeUnit.HOURS);
        }
        if (updatesApplied() != 0) {
            throw new IllegalStateException(label + " applied " + updatesApplied() + " updates: its dimension "
                    + "did not come from the savepoint alone");
        }
        checkAnswers(label, lookups, contestant.ceiling());
        return new Restore(parallelism, seconds, lookups, hits());
    }

    /**
     * The enrichment's lookups a batch on average, from its counters: how much of each index call's fixed cost (the
     * hand-over to the worker, the locks) a lookup carries. The keyed mode's batches include its update batches.
     */
    private static void printLookupBatches(Contestant contestant) {
        final long lookups = FlixMetrics.values(ENRICHMENT, "flixLookups").stream()
                .mapToLong(count -> ((Number) count).longValue()).sum();
        final long batches = FlixMetrics.values(ENRICHMENT, "flixFlushes").stream()
                .mapToLong(count -> ((Number) count).longValue()).sum();
        System.out.printf(Locale.ROOT, "%-22s batches: %d lookups in %d batches, %.1f a batch%n", contestant.label(),
                lookups, batches, batches == 0 ? 0.0 : (double) lookups / batches);
    }

    /** The cluster's and the job's configuration (the same, as in a local environment). */
    static Configuration configuration(Contestant contestant, Setup setup, Path checkpoints) {
        final Configuration conf = new Configuration();
        // savepoints of this size go to files, not to the job manager's memory
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());
        if (contestant.kind().equals("rocksdb")) {
            conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
            conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, setup.rocksdbManaged());
        } else {
            conf.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        }
        // the FliX operators' metrics: whether the dimension is loaded, its bytes, the backend its subtasks report
        FlixMetrics.addTo(conf);
        conf.set(PipelineOptions.OBJECT_REUSE, setup.objectReuse());
        return conf;
    }

    /**
     * The contestant's job at {@code parallelism}: the dimension's updates, {@code lookups} orders from the source
     * with uid {@code ordersUid} (held back until released), the enrichment and the checking sink. Every operator
     * that may hold state has a uid of its own, so that a job restored from a savepoint finds it.
     */
    private static StreamExecutionEnvironment environment(Contestant contestant, Setup setup, Configuration conf,
                                                          int parallelism, String ordersUid, long lookups) {
        final long keys = setup.keys();
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
        final long space = 2 * keys; // ids beyond the dimension: half the orders miss
        final DataStream<Order> orders = env.fromSource(GeneratedSource.of(
                        i -> new Order(i, productId(Math.floorMod(i * 0x2545F4914F6CDD1DL, space)), 1),
                        lookups, TypeInformation.of(Order.class)).heldBackUntil(BenchmarkProgress::lookupsReleased),
                WatermarkStrategy.noWatermarks(), "orders").uid(ordersUid);
        if (setup.payload().equals("long")) {
            final DataStream<ProductPrice> updates = priceUpdates(env, keys);
            enrich(contestant, setup, updates, orders, p -> p.id, p -> p.price, Types.LONG)
                    .sinkTo(new AnswerCheckingSink<Long>(keys, price -> price, !contestant.ceiling())).name("check")
                    .uid("check");
        } else {
            final DataStream<Product> updates = env.fromSource(GeneratedSource.of(
                            EnrichmentJob::listing, keys, TypeInformation.of(Product.class)),
                    WatermarkStrategy.noWatermarks(), "products").uid("products");
            enrich(contestant, setup, updates, orders, p -> p.id, p -> p, TypeInformation.of(Product.class))
                    .sinkTo(new AnswerCheckingSink<Product>(keys, product -> product.priceCents, !contestant.ceiling()))
                    .name("check").uid("check");
        }
        return env;
    }

    /** The dimension's updates with payload {@code long}: products 0 to {@code keys - 1}, each with its price. */
    static DataStream<ProductPrice> priceUpdates(StreamExecutionEnvironment env, long keys) {
        return env.fromSource(GeneratedSource.of(i -> new ProductPrice(productId(i), price(i)), keys,
                        TypeInformation.of(ProductPrice.class)),
                WatermarkStrategy.noWatermarks(), "products").uid("products");
    }

    /**
     * The contestants of {@code --variants}: a FliX kind once for each of {@code backends}, or on the backend its name
     * gives ({@code flix-shared/gpu}); the others once.
     */
    static List<Contestant> contestants(Args options, List<Backend> backends) {
        final List<Contestant> contestants = new ArrayList<>();
        for (String variant : options.text("--variants", String.join(",", KINDS)).split(",")) {
            final String kind = variant.trim();
            final int slash = kind.indexOf('/');
            if (slash > 0) { // one FliX contestant on the backend named: flix-shared/gpu
                final String backend = kind.substring(slash + 1).trim();
                if (!backend.equalsIgnoreCase("cpu") && !backend.equalsIgnoreCase("gpu")) {
                    throw new IllegalArgumentException("--variants: '" + kind + "' names the backend '" + backend
                            + "'; a FliX contestant runs on cpu or gpu");
                }
                contestants.add(new Contestant(kind.substring(0, slash),
                        Backend.valueOf(backend.toUpperCase(Locale.ROOT))));
            } else if (kind.startsWith("flix-")) {
                for (Backend backend : backends) {
                    contestants.add(new Contestant(kind, backend));
                }
            } else {
                contestants.add(Contestant.of(kind));
            }
        }
        return contestants;
    }

    /** {@code --flush-policy load|timer} (default load). */
    static FlushPolicy flushPolicy(Args options) {
        final String policy = options.text("--flush-policy", "load");
        try {
            return FlushPolicy.valueOf(policy.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--flush-policy is load or timer, not '" + policy + "'", e);
        }
    }

    /**
     * The contestant's enrichment of the orders against the updates' payloads (also {@link LatencyBenchmark}'s: the
     * same jobs, other orders and sink).
     */
    static <U, P> DataStream<Enriched<Order, P>> enrich(
            Contestant contestant, Setup setup, DataStream<U> updates, DataStream<Order> orders,
            KeySelector<U, Long> key, SerializableFunction<U, P> payloadOf, TypeInformation<P> payloadType) {
        final TypeInformation<Enriched<Order, P>> enrichedType =
                FlixEnrichment.enrichedType(TypeInformation.of(Order.class), payloadType);
        return switch (contestant.kind()) {
            case "flix-shared", "flix-keyed" -> (contestant.kind().equals("flix-shared")
                    ? FlixEnrichment.shared(updates, orders) : FlixEnrichment.of(updates, orders))
                    .key(key, o -> o.productId)
                    .payload(u -> {
                        flixUpdateSeen();
                        return payloadOf.apply(u);
                    }, payloadType)
                    .batchSize(setup.batchSize())
                    .flushInterval(Duration.ofMillis(setup.flushMillis()))
                    .flushPolicy(setup.flushPolicy())
                    .updateBatchMax(setup.updateBatchMax())
                    .threads(setup.flixThreads())
                    .exactKeyTable(setup.flixExactKeyTable())
                    .backend(contestant.backend())
                    .name(ENRICHMENT)
                    .uid(ENRICHMENT)
                    .build();
            case "broadcast" -> {
                final MapStateDescriptor<Long, P> dimension =
                        new MapStateDescriptor<>("dimension", Types.LONG, payloadType);
                yield orders.connect(updates.broadcast(dimension))
                        .process(new EnrichmentBaselines.BroadcastStateEnrichment<>(dimension, key, payloadOf),
                                enrichedType)
                        .name(ENRICHMENT).uid(ENRICHMENT);
            }
            case "heap", "rocksdb" -> keyedProcess(updates, orders, key,
                    new EnrichmentBaselines.ValueStateEnrichment<>(payloadOf, payloadType), enrichedType);
            case "ceiling-keyed" -> keyedProcess(updates, orders, key, new EnrichmentBaselines.KeyedNoState<U, P>(),
                    enrichedType);
            case "ceiling-chained" -> {
                updates.broadcast().sinkTo(new EnrichmentBaselines.DroppingSink<>()).name("drop updates")
                        .uid("drop updates");
                yield orders.map(new EnrichmentBaselines.AnswerNothing<P>()).returns(enrichedType).name(ENRICHMENT)
                        .uid(ENRICHMENT);
            }
            default -> throw new IllegalStateException("no job for " + contestant.kind());
        };
    }

    /** The keyed baselines' topology: both inputs keyed by the product id into one keyed co-process function. */
    private static <U, P> DataStream<Enriched<Order, P>> keyedProcess(
            DataStream<U> updates, DataStream<Order> orders, KeySelector<U, Long> key,
            KeyedCoProcessFunction<Long, U, Order, Enriched<Order, P>> function,
            TypeInformation<Enriched<Order, P>> enrichedType) {
        return updates.keyBy(key, Types.LONG)
                .connect(orders.keyBy(o -> o.productId, Types.LONG))
                .process(function, enrichedType)
                .name(ENRICHMENT)
                .uid(ENRICHMENT);
    }

    /** Whether every copy of the dimension the contestant keeps holds every key. */
    static boolean loaded(Contestant contestant, Setup setup) {
        final long keys = setup.keys();
        final int parallelism = setup.parallelism();
        return contestant.flix() ? flixHolds(contestant, keys, parallelism)
                : updatesApplied() >= (contestant.updatesBroadcast() ? keys * parallelism : keys);
    }

    /**
     * Whether every subtask of a restored job that holds the dimension holds its restored part: for FliX when the
     * gauges say so, as for the load (they appear when a subtask opens, after it restored its state); for the
     * others when every subtask of their function has opened (Flink opens a function after restoring its state).
     */
    private static boolean restored(Contestant contestant, long keys, int parallelism) {
        return contestant.flix() ? flixHolds(contestant, keys, parallelism) : functionsOpened() == parallelism;
    }

    /** Whether the FliX subtasks' {@code flixIndexSize} gauges say that they hold the whole dimension. */
    private static boolean flixHolds(Contestant contestant, long keys, int parallelism) {
        if (contestant.kind().equals("flix-keyed")) {
            // each subtask holds its key groups' slice: the slices add up to the dimension
            final List<Object> sizes = FlixMetrics.values(ENRICHMENT, "flixIndexSize");
            return sizes.size() == parallelism
                    && sizes.stream().mapToLong(size -> ((Number) size).longValue()).sum() == keys;
        }
        // shared: every writer subtask's task manager dimension holds the whole dimension
        final List<Object> sizes = FlixMetrics.values(DIMENSION_WRITER, "flixIndexSize");
        return sizes.size() == parallelism && sizes.stream().allMatch(size -> ((Number) size).longValue() >= keys);
    }

    /**
     * The longest a FliX operator took to write its part of the last checkpoint, from the {@code flixSnapshotMillis}
     * gauges (keyed: each subtask writes its slice; shared: one writer writes the dimension); -1 for the others.
     */
    private static long flixSnapshotMillis(Contestant contestant) {
        if (!contestant.flix()) {
            return -1;
        }
        return FlixMetrics.values(contestant.kind().equals("flix-keyed") ? ENRICHMENT : DIMENSION_WRITER,
                "flixSnapshotMillis").stream().mapToLong(millis -> ((Number) millis).longValue()).max().orElse(-1);
    }

    /**
     * The FliX indexes' bytes, from their {@code flixIndexBytes} gauges: one index per subtask in the keyed mode,
     * one per task manager in the shared mode (its applier's); -1 for the others, or where no gauge says.
     */
    private static long indexBytes(Contestant contestant, int parallelism) {
        if (contestant.kind().equals("flix-keyed")) {
            final List<Object> bytes = FlixMetrics.values(ENRICHMENT, "flixIndexBytes");
            return bytes.size() == parallelism ? bytes.stream().mapToLong(b -> ((Number) b).longValue()).sum() : -1;
        }
        if (contestant.kind().equals("flix-shared")) {
            long sum = 0;
            for (int subtask = 0; subtask < parallelism; subtask++) {
                if (FlixMetrics.value(DIMENSION_WRITER, subtask, "flixApplier") instanceof Number applier
                        && applier.intValue() == 1) {
                    final Object bytes = FlixMetrics.value(DIMENSION_WRITER, subtask, "flixIndexBytes");
                    if (bytes == null) {
                        return -1;
                    }
                    sum += ((Number) bytes).longValue();
                }
            }
            return sum;
        }
        return -1;
    }

    /** The backends the FliX subtasks reported (joined where they differ); for the others their state's home. */
    static String backendUsed(Contestant contestant) {
        if (contestant.flix()) {
            final TreeSet<String> names = new TreeSet<>();
            FlixMetrics.values(ENRICHMENT, "flixBackend").forEach(name -> names.add(String.valueOf(name)));
            // the GPUs in use: each keyed subtask's device, the shared dimension's replicas
            final TreeSet<String> devices = new TreeSet<>();
            FlixMetrics.values(ENRICHMENT, "flixDevice").forEach(d -> devices.add(String.valueOf(d)));
            FlixMetrics.values(ENRICHMENT, "flixDevices")
                    .forEach(d -> devices.addAll(List.of(String.valueOf(d).split(","))));
            devices.remove("-1");
            return (names.isEmpty() ? "unknown" : String.join("+", names))
                    + (devices.isEmpty() ? "" : " devices " + String.join(",", devices));
        }
        return switch (contestant.kind()) {
            case "rocksdb" -> "rocksdb";
            case "heap", "broadcast" -> "hashmap";
            default -> "none";
        };
    }

    /** A serializable function, for the payload of an update. */
    @FunctionalInterface
    interface SerializableFunction<T, R> extends java.io.Serializable {
        R apply(T t);
    }

    /** Product ids are spread over the key space, as hashed ids are. */
    static long productId(long ordinal) {
        return ordinal * PRODUCT_ID_FACTOR;
    }

    /** The ordinal of a product id ({@link #productId}'s inverse). */
    static long ordinalOf(long productId) {
        return productId * ORDINAL_FACTOR;
    }

    /** The price of product {@code ordinal}, in cents (as {@link EnrichmentJob#listing} sets it). */
    static long price(long ordinal) {
        return 100 + Math.floorMod(ordinal * 7919, 100_000);
    }

    /** The number of the first {@code lookups} orders whose product is among the first {@code keys}. */
    public static long expectedHits(long keys, long lookups) {
        final long space = 2 * keys;
        long hits = 0;
        for (long i = 0; i < lookups; i++) {
            if (Math.floorMod(i * 0x2545F4914F6CDD1DL, space) < keys) {
                hits++;
            }
        }
        return hits;
    }

    /** The inverse of an odd number modulo 2^64 (Newton's iteration: each step doubles the correct low bits). */
    private static long inverse(long odd) {
        long x = odd; // right in the low 3 bits
        for (int i = 0; i < 5; i++) {
            x *= 2 - odd * x;
        }
        return x;
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

    private static long bytesUnder(Path dir) throws java.io.IOException {
        try (Stream<Path> walk = Files.walk(dir)) {
            return walk.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    static void deleteRecursively(Path dir) throws java.io.IOException {
        final List<Path> paths = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.forEach(paths::add);
        }
        paths.sort(Comparator.reverseOrder());
        for (Path p : paths) {
            Files.deleteIfExists(p);
        }
    }
}
