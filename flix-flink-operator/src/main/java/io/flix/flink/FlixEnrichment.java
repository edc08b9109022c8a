package io.flix.flink;

import io.flix.flink.keyed.FlixEnrichmentOperator;
import io.flix.flink.keyed.IndexKey;
import io.flix.flink.keyed.ModeGuard;
import io.flix.flink.shared.DimensionWriterOperator;
import io.flix.flink.shared.EncodedUpdates;
import io.flix.flink.shared.EncodedUpdatesTypeInfo;
import io.flix.flink.shared.SharedLookupOperator;
import io.flix.flink.shared.UpdateEncoder;
import io.flix.index.Backend;
import io.flix.index.GpuMemoryBudget;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.util.OutputTag;

import java.time.Duration;
import java.util.UUID;

/**
 * Enriches a stream of lookup events against a dimension kept current by a stream of updates, in a FliX index on
 * each task manager. Two modes, chosen by the factory:
 *
 * <ul>
 *   <li>{@link #shared(DataStream, DataStream) shared}: every task manager holds the whole dimension once, in one
 *       index shared by the enrichment's subtasks there. Lookups are not keyed: they stay chained to their upstream
 *       operator (no shuffle, no serialization) and floor, ceiling and range lookups answer over the whole
 *       dimension. Every update is broadcast to every task manager and applied there once. Choose it where the
 *       dimension fits one task manager (its GPU, or its heap with the CPU backend): it is the fast mode, and the
 *       only one whose ordered lookups see every key.</li>
 *   <li>{@link #of(DataStream, DataStream) keyed}: both inputs are keyed by the index key and each subtask holds its
 *       key groups' slice of the dimension. Choose it where the dimension is larger than one task manager can hold:
 *       it scales out with the job, but every lookup crosses a key-by exchange, and ordered lookups answer within
 *       one subtask's keys only.</li>
 * </ul>
 *
 * <pre>{@code
 * FlixEnrichment<Product, Order, Product> enrichment = FlixEnrichment.shared(products, orders)
 *         .key(p -> p.id, o -> o.productId)
 *         .payload(p -> p.deleted ? null : p, Product.class)   // null deletes the key
 *         .batchSize(10_000)
 *         .flushInterval(Duration.ofMillis(100))
 *         .backend(Backend.AUTO);
 * DataStream<Enriched<Order, Product>> enriched = enrichment.build();
 * DataStream<Rejected> rejected = enrichment.rejected();
 * }</pre>
 *
 * Lookups are exact by default; {@link #lookup(LookupKind)} and {@link #range(KeySelector, int)} choose the
 * ordered kinds. Records with a null key, updates whose payload does not serialize, malformed range lookups and
 * lookups that find a stored payload that does not deserialize go to {@link #rejected()}; the job goes on. The keyed
 * operator and its state (including what a restore with a changed payload type does) are described in
 * {@link FlixEnrichmentOperator}; the shared mode's operators in {@link SharedLookupOperator} and
 * {@link DimensionWriterOperator}, its semantics in {@code docs/shared-mode.md}.
 *
 * @param <U> update records
 * @param <E> lookup events
 * @param <P> payloads stored per key
 */
public final class FlixEnrichment<U, E, P> {

    /** The side output of records that could not be used. */
    public static final OutputTag<Rejected> REJECTED = new OutputTag<>("flix-rejected",
            TypeInformation.of(Rejected.class));
    /**
     * Shared mode: the most updates broadcast to the writers in one record. Larger blocks save the writers little
     * more and hold updates longer at a slow source (the flush interval bounds that too).
     */
    private static final int UPDATE_BLOCK_MAX = 4096;
    private final DataStream<U> updates;
    private final DataStream<E> lookups;
    private KeySelector<U, Long> updateKey;
    private KeySelector<E, Long> lookupKey;
    private final PayloadFunction<U, P> payload;
    private final TypeInformation<P> payloadType;
    /** One index per task manager shared by the subtasks; else keyed, a slice per subtask. */
    private final boolean shared;
    private Duration dimensionStartTimeout = Duration.ofMinutes(10);
    private LookupKind kind = LookupKind.EXACT;
    private KeySelector<E, Long> rangeEnd;
    private int rangeLimit;
    private int batchSize = 10_000;
    /** 0: the task manager's choice, {@link IndexSettings#loadBatchMax}. */
    private int updateBatchMax;
    private Duration flushInterval = Duration.ofMillis(100);
    private FlushPolicy flushPolicy = FlushPolicy.LOAD;
    private IndexSettings settings = IndexSettings.defaults();
    private String name = "FliX enrichment";
    private String uid;
    private int parallelism = -1;
    private SingleOutputStreamOperator<Enriched<E, P>> built;
    /** Shared mode: the update encoder, whose side output holds the rejected updates. */
    private SingleOutputStreamOperator<EncodedUpdates> encoded;

    private FlixEnrichment(DataStream<U> updates, DataStream<E> lookups, PayloadFunction<U, P> payload,
                           TypeInformation<P> payloadType, boolean shared) {
        this.updates = updates;
        this.lookups = lookups;
        this.payload = payload;
        this.payloadType = payloadType;
        this.shared = shared;
    }

    /**
     * Starts a keyed enrichment (the dimension partitioned by key over the subtasks); until {@link #payload} is
     * called, the stored payload is the update itself.
     */
    public static <U, E> FlixEnrichment<U, E, U> of(DataStream<U> updates, DataStream<E> lookups) {
        if (updates == null || lookups == null) {
            throw new IllegalArgumentException("updates and lookups must not be null");
        }
        return new FlixEnrichment<>(updates, lookups, update -> update, updates.getType(), false);
    }

    /**
     * Starts a shared enrichment (the whole dimension once per task manager, lookups chained to their upstream
     * operator); until {@link #payload} is called, the stored payload is the update itself.
     */
    public static <U, E> FlixEnrichment<U, E, U> shared(DataStream<U> updates, DataStream<E> lookups) {
        if (updates == null || lookups == null) {
            throw new IllegalArgumentException("updates and lookups must not be null");
        }
        return new FlixEnrichment<>(updates, lookups, update -> update, updates.getType(), true);
    }

    /** Whether this is the shared mode. */
    public boolean isShared() {
        return shared;
    }

    /** The index key of each update and of each lookup (the start of its range for RANGE lookups). */
    public FlixEnrichment<U, E, P> key(KeySelector<U, Long> updateKey, KeySelector<E, Long> lookupKey) {
        if (updateKey == null || lookupKey == null) {
            throw new IllegalArgumentException("both key functions are required");
        }
        this.updateKey = updateKey;
        this.lookupKey = lookupKey;
        return this;
    }

    /** What to store per key; a function returning null deletes the update's key. */
    public <Q> FlixEnrichment<U, E, Q> payload(PayloadFunction<U, Q> function, TypeInformation<Q> type) {
        if (function == null || type == null) {
            throw new IllegalArgumentException("the payload function and its type are required");
        }
        final FlixEnrichment<U, E, Q> next = new FlixEnrichment<>(updates, lookups, function, type, shared);
        next.dimensionStartTimeout = dimensionStartTimeout;
        next.updateKey = updateKey;
        next.lookupKey = lookupKey;
        next.kind = kind;
        next.rangeEnd = rangeEnd;
        next.rangeLimit = rangeLimit;
        next.batchSize = batchSize;
        next.updateBatchMax = updateBatchMax;
        next.flushInterval = flushInterval;
        next.flushPolicy = flushPolicy;
        next.settings = settings;
        next.name = name;
        next.uid = uid;
        next.parallelism = parallelism;
        return next;
    }

    public <Q> FlixEnrichment<U, E, Q> payload(PayloadFunction<U, Q> function, Class<Q> type) {
        return payload(function, TypeInformation.of(type));
    }

    /** EXACT (the default), FLOOR or CEILING; for RANGE use {@link #range(KeySelector, int)}. */
    public FlixEnrichment<U, E, P> lookup(LookupKind lookupKind) {
        if (lookupKind == null || lookupKind == LookupKind.RANGE) {
            throw new IllegalArgumentException("lookup takes EXACT, FLOOR or CEILING; RANGE goes through range()");
        }
        this.kind = lookupKind;
        return this;
    }

    /** Range lookups over {@code [lookup key, end(event)]}, at most {@code limit} keys each. */
    public FlixEnrichment<U, E, P> range(KeySelector<E, Long> end, int limit) {
        if (end == null || limit < 1) {
            throw new IllegalArgumentException("range needs an end function and a limit >= 1");
        }
        this.kind = LookupKind.RANGE;
        this.rangeEnd = end;
        this.rangeLimit = limit;
        return this;
    }

    /** Records (updates and lookups) per micro-batch. */
    public FlixEnrichment<U, E, P> batchSize(int records) {
        if (records < 1) {
            throw new IllegalArgumentException("batchSize must be >= 1, was " + records);
        }
        this.batchSize = records;
        return this;
    }

    /**
     * Shared mode under {@link FlushPolicy#LOAD}: the most updates its task manager's applier takes in one batch
     * (the block of updates that reaches it, at most 4,096, goes whole). 0, the default: {@link
     * IndexSettings#loadBatchMax} on each task manager, 2^22 where the CPU index updates on 8 threads or more, else
     * 2^21. Larger batches put more keys into each index node a merge touches (a load on the CPU index on 16 cores
     * applied 1.6x as fast in batches of 2^20 as of 2^17, and 1.17x as fast in batches of 2^22 as of 2^21:
     * docs/results). The applier takes what gathered while it applied the batch before, so batches reach this only
     * under a load or a burst of updates; it bounds the memory they hold and how long a lookup waits for an apply.
     * Under {@link FlushPolicy#TIMER} the updates go in batches of {@link #batchSize}.
     */
    public FlixEnrichment<U, E, P> updateBatchMax(int updates) {
        if (updates < 0) {
            throw new IllegalArgumentException("updateBatchMax must be >= 0 (0: the task manager's choice), was "
                    + updates);
        }
        this.updateBatchMax = updates;
        return this;
    }

    /**
     * When a micro-batch goes to the index, in both modes: {@link FlushPolicy#LOAD} (the default; batches follow the
     * load, a lookup never waits for a timer while the index is idle) or {@link FlushPolicy#TIMER} (on size or on the
     * {@link #flushInterval}). See {@link FlushPolicy} and {@code docs/operator.md}.
     */
    public FlixEnrichment<U, E, P> flushPolicy(FlushPolicy policy) {
        if (policy == null) {
            throw new IllegalArgumentException("the flush policy is required");
        }
        this.flushPolicy = policy;
        return this;
    }

    /**
     * Longest processing time a record waits in a batch under {@link FlushPolicy#TIMER} (and for the shared mode's
     * updates); zero flushes only on size, watermarks and checkpoints.
     */
    public FlixEnrichment<U, E, P> flushInterval(Duration interval) {
        if (interval == null || interval.isNegative()) {
            throw new IllegalArgumentException("flushInterval must be zero or positive");
        }
        this.flushInterval = interval;
        return this;
    }

    public FlixEnrichment<U, E, P> backend(Backend backend) {
        this.settings = settings.withBackend(backend);
        return this;
    }

    /** CPU backend threads per subtask (default: the cores shared among the subtasks). */
    public FlixEnrichment<U, E, P> threads(int threads) {
        this.settings = settings.withThreads(threads);
        return this;
    }

    /**
     * GPUs of each task manager to use (default 0: every device it sees): the keyed mode spreads its subtasks over
     * them by subtask index, the shared mode holds a replica of the dimension on each; see {@link IndexSettings}.
     */
    public FlixEnrichment<U, E, P> devices(int devices) {
        this.settings = settings.withDevices(devices);
        return this;
    }

    /**
     * The most device memory the GPU indexes of a task manager may hold on one device together (default
     * {@link GpuMemoryBudget#NONE}: the device's size), e.g. {@code GpuMemoryBudget.parse("80%")} or
     * {@code GpuMemoryBudget.parse("40gb")}. Every index of the task manager on that device counts against it: the
     * keyed mode's subtasks that share the device, the shared mode's one dimension. An update batch that would grow
     * past it fails the job with a {@code DeviceMemoryBudgetExceededException} naming the budget, the bytes in use
     * and asked for, before the device runs out; the index stays as it was. What to do then: raise the budget, run
     * more task managers (the keyed mode spreads the dimension over them), or use the CPU backend
     * ({@code docs/gpu-tuning.md}).
     */
    public FlixEnrichment<U, E, P> gpuMemoryBudget(GpuMemoryBudget budget) {
        if (budget == null) {
            throw new IllegalArgumentException("gpuMemoryBudget must not be null (GpuMemoryBudget.NONE for none)");
        }
        this.settings = settings.withGpuMemoryBudget(budget);
        return this;
    }

    /**
     * Whether the CPU backend keeps every key with its value in a hash table beside its nodes (default: it does):
     * exact lookups then read about one cache line a key, for 16 to 32 more heap bytes a key. Floor, ceiling and
     * range lookups do not use it; the GPU backend has none.
     */
    public FlixEnrichment<U, E, P> exactKeyTable(boolean kept) {
        this.settings = settings.withExactKeyTable(kept);
        return this;
    }

    /** All index settings at once. */
    public FlixEnrichment<U, E, P> index(IndexSettings indexSettings) {
        if (indexSettings == null) {
            throw new IllegalArgumentException("indexSettings must not be null");
        }
        this.settings = indexSettings;
        return this;
    }

    /**
     * Shared mode: how long lookups wait at most for the task manager's dimension to be started by its writer
     * (restored or empty) before the job fails (default 10 minutes).
     */
    public FlixEnrichment<U, E, P> dimensionStartTimeout(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("dimensionStartTimeout must be positive");
        }
        this.dimensionStartTimeout = timeout;
        return this;
    }

    /** The index settings so far (tests). */
    IndexSettings indexSettings() {
        return settings;
    }

    public FlixEnrichment<U, E, P> name(String operatorName) {
        this.name = operatorName;
        return this;
    }

    /** The operator's uid: set it so savepoints find the dimension. */
    public FlixEnrichment<U, E, P> uid(String operatorUid) {
        this.uid = operatorUid;
        return this;
    }

    public FlixEnrichment<U, E, P> parallelism(int operatorParallelism) {
        this.parallelism = operatorParallelism;
        return this;
    }

    /** Adds the enrichment to the job and returns the enriched lookups. Call once. */
    public SingleOutputStreamOperator<Enriched<E, P>> build() {
        if (built != null) {
            throw new IllegalStateException("build() was already called");
        }
        if (updateKey == null) {
            throw new IllegalStateException("call key(...) before build()");
        }
        final SerializerConfig serializerConfig = updates.getExecutionEnvironment().getConfig().getSerializerConfig();
        if (shared) {
            return buildShared(serializerConfig);
        }
        final FlixEnrichmentOperator<U, E, P> operator = new FlixEnrichmentOperator<>(payload,
                payloadType.createSerializer(serializerConfig), lookups.getType().createSerializer(serializerConfig),
                kind, rangeEnd, rangeLimit, batchSize, flushInterval.toMillis(), flushPolicy, settings, REJECTED);
        operator.guardUid(uid);
        // null keys are routed to one subtask and rejected by the operator, which applies the key functions again
        built = updates.keyBy(new IndexKey<>(updateKey), Types.LONG)
                .connect(lookups.keyBy(new IndexKey<>(lookupKey), Types.LONG))
                .transform(name, enrichedType(lookups.getType(), payloadType), operator);
        if (uid != null) {
            built.uid(uid);
        }
        if (parallelism > 0) {
            built.setParallelism(parallelism);
        }
        return built;
    }

    /**
     * Shared mode: updates are encoded once where they come from, broadcast to the dimension's writers (one applies
     * them per task manager), and lookups are answered by an operator chained to their upstream. The writers get the
     * lookups' parallelism and slot sharing group, so that every task manager running lookups runs a writer, and the
     * lookups' end as a second input, so that they run as long as the lookups do.
     */
    private SingleOutputStreamOperator<Enriched<E, P>> buildShared(SerializerConfig serializerConfig) {
        final TypeSerializer<P> payloadSerializer = payloadType.createSerializer(serializerConfig);
        final String dimensionId = uid != null ? uid : "flix-" + UUID.randomUUID();
        encoded = updates.transform(name + ": encode updates", new EncodedUpdatesTypeInfo(),
                new UpdateEncoder<>(updateKey, payload, payloadSerializer, Math.min(batchSize, UPDATE_BLOCK_MAX),
                        flushInterval.toMillis(), REJECTED));
        // chained to the update source, so each source subtask's order reaches the writers as it was
        encoded.setParallelism(updates.getParallelism());
        built = lookups.transform(name, enrichedType(lookups.getType(), payloadType),
                new SharedLookupOperator<>(dimensionId, settings, payloadSerializer,
                        lookups.getType().createSerializer(serializerConfig), lookupKey, kind, rangeEnd, rangeLimit,
                        batchSize, flushInterval.toMillis(), dimensionStartTimeout.toMillis(), flushPolicy,
                        REJECTED));
        if (parallelism > 0) {
            built.setParallelism(parallelism);
        }
        final DataStream<Void> lookupsEnd = built.getSideOutput(SharedLookupOperator.END_OF_LOOKUPS);
        final SingleOutputStreamOperator<Void> writer = encoded.broadcast().connect(lookupsEnd.broadcast())
                .transform(name + ": dimension", Types.VOID, new DimensionWriterOperator<>(dimensionId, settings,
                        payloadSerializer, batchSize, flushInterval.toMillis(), flushPolicy, updateBatchMax));
        writer.setParallelism(built.getParallelism());
        built.getTransformation().getSlotSharingGroup().ifPresent(writer::slotSharingGroup);
        if (uid != null) {
            encoded.uid(uid + "-encode");
            writer.uid(uid + "-dimension");
            built.uid(uid + "-lookups");
            // the uid itself goes to a guard: a keyed mode's savepoint under it fails the restore instead of
            // starting an empty dimension (see ModeGuard). It hangs off the writer, which emits no record: fed by
            // the update stream, every update would be copied to it (object reuse off) only to be dropped.
            writer.keyBy(nothing -> 0L, Types.LONG)
                    .transform(name + ": mode guard", Types.VOID, new ModeGuard<Void>(uid))
                    .uid(uid).setParallelism(built.getParallelism());
        }
        return built;
    }

    /** The records the enrichment rejected. Call after {@link #build()}. */
    public DataStream<Rejected> rejected() {
        if (built == null) {
            throw new IllegalStateException("call build() first");
        }
        final DataStream<Rejected> lookupsRejected = built.getSideOutput(REJECTED);
        return encoded == null ? lookupsRejected : lookupsRejected.union(encoded.getSideOutput(REJECTED));
    }

    /**
     * Type information of {@link Enriched} for an event and a payload type: a POJO, no Kryo, with a serializer that
     * copies without reflection ({@link EnrichedTypeInfo}).
     */
    public static <E, P> TypeInformation<Enriched<E, P>> enrichedType(TypeInformation<E> eventType,
                                                                      TypeInformation<P> payloadType) {
        return new EnrichedTypeInfo<>(eventType, payloadType);
    }
}
