package io.flix.flink;

import io.flix.index.Backend;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.EnumTypeInfo;
import org.apache.flink.api.java.typeutils.ListTypeInfo;
import org.apache.flink.api.java.typeutils.PojoField;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.util.OutputTag;

import java.time.Duration;
import java.util.List;

/**
 * Enriches a stream of lookup events against a dimension kept current by a stream of updates, in a FliX index on
 * each task manager:
 *
 * <pre>{@code
 * FlixEnrichment<Product, Order, Product> enrichment = FlixEnrichment.of(products, orders)
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
 * ordered kinds, which answer within one subtask's keys (see {@link LookupKind}). Records with a null key, updates
 * whose payload does not serialize, malformed range lookups and lookups that find a stored payload that does not
 * deserialize go to {@link #rejected()}; the job goes on. The operator and its state (including what a restore
 * with a changed payload type does) are described in {@link FlixEnrichmentOperator}.
 *
 * @param <U> update records
 * @param <E> lookup events
 * @param <P> payloads stored per key
 */
public final class FlixEnrichment<U, E, P> {

    /** The side output of records that could not be used. */
    public static final OutputTag<Rejected> REJECTED = new OutputTag<>("flix-rejected",
            TypeInformation.of(Rejected.class));

    private final DataStream<U> updates;
    private final DataStream<E> lookups;
    private KeySelector<U, Long> updateKey;
    private KeySelector<E, Long> lookupKey;
    private final PayloadFunction<U, P> payload;
    private final TypeInformation<P> payloadType;
    private LookupKind kind = LookupKind.EXACT;
    private KeySelector<E, Long> rangeEnd;
    private int rangeLimit;
    private int batchSize = 10_000;
    private Duration flushInterval = Duration.ofMillis(100);
    private IndexSettings settings = IndexSettings.defaults();
    private String name = "FliX enrichment";
    private String uid;
    private int parallelism = -1;
    private SingleOutputStreamOperator<Enriched<E, P>> built;

    private FlixEnrichment(DataStream<U> updates, DataStream<E> lookups, PayloadFunction<U, P> payload,
                           TypeInformation<P> payloadType) {
        this.updates = updates;
        this.lookups = lookups;
        this.payload = payload;
        this.payloadType = payloadType;
    }

    /** Starts an enrichment; until {@link #payload} is called, the stored payload is the update itself. */
    public static <U, E> FlixEnrichment<U, E, U> of(DataStream<U> updates, DataStream<E> lookups) {
        if (updates == null || lookups == null) {
            throw new IllegalArgumentException("updates and lookups must not be null");
        }
        return new FlixEnrichment<>(updates, lookups, update -> update, updates.getType());
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
        final FlixEnrichment<U, E, Q> next = new FlixEnrichment<>(updates, lookups, function, type);
        next.updateKey = updateKey;
        next.lookupKey = lookupKey;
        next.kind = kind;
        next.rangeEnd = rangeEnd;
        next.rangeLimit = rangeLimit;
        next.batchSize = batchSize;
        next.flushInterval = flushInterval;
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

    /** Longest processing time a record waits in a batch; zero flushes only on size, watermarks and checkpoints. */
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
     * GPUs to spread the subtasks over, by subtask index (default: those {@code CUDA_VISIBLE_DEVICES} lists). The
     * subtasks on one device share its context and serialise their GPU work; see {@link FlixEnrichmentOperator}.
     */
    public FlixEnrichment<U, E, P> devices(int devices) {
        this.settings = settings.withDevices(devices);
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
        final FlixEnrichmentOperator<U, E, P> operator = new FlixEnrichmentOperator<>(payload,
                payloadType.createSerializer(serializerConfig), lookups.getType().createSerializer(serializerConfig),
                kind, rangeEnd, rangeLimit, batchSize, flushInterval.toMillis(), settings);
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

    /** The records the operator rejected. Call after {@link #build()}. */
    public DataStream<Rejected> rejected() {
        if (built == null) {
            throw new IllegalStateException("call build() first");
        }
        return built.getSideOutput(REJECTED);
    }

    /** Type information of {@link Enriched} for an event and a payload type: a POJO, no Kryo. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static <E, P> TypeInformation<Enriched<E, P>> enrichedType(TypeInformation<E> eventType,
                                                                      TypeInformation<P> payloadType) {
        try {
            final TypeInformation<Match<P>> matchType = new PojoTypeInfo<>((Class<Match<P>>) (Class) Match.class,
                    List.of(new PojoField(Match.class.getField("key"), Types.LONG),
                            new PojoField(Match.class.getField("payload"), payloadType)));
            return new PojoTypeInfo<>((Class<Enriched<E, P>>) (Class) Enriched.class, List.of(
                    new PojoField(Enriched.class.getField("event"), eventType),
                    new PojoField(Enriched.class.getField("kind"), new EnumTypeInfo<>(LookupKind.class)),
                    new PojoField(Enriched.class.getField("payload"), payloadType),
                    new PojoField(Enriched.class.getField("matchedKey"), Types.LONG),
                    new PojoField(Enriched.class.getField("matches"), new ListTypeInfo<>(matchType))));
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException(e);
        }
    }
}
