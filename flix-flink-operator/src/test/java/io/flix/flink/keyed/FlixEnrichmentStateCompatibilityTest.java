package io.flix.flink.keyed;

import io.flix.flink.Enriched;
import io.flix.flink.FlixEnrichment;
import io.flix.flink.FlushPolicy;
import io.flix.flink.IndexSettings;
import io.flix.flink.LongCodecSerializer;
import io.flix.flink.Lookup;
import io.flix.flink.LookupKind;
import io.flix.flink.PoisonStringSerializer;
import io.flix.flink.Product;
import io.flix.flink.Update;
import io.flix.flink.payload.InlinePayloads;
import io.flix.index.Backend;
import io.flix.index.FlixIndex;

import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.java.typeutils.PojoField;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.util.StateMigrationException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.function.LongFunction;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A snapshot restored into a job whose payload serializer changed: the payload serializer's snapshot in the state
 * is resolved against the job's serializer as Flink's keyed state does, and the payloads are restored as is,
 * migrated, read with a reconfigured serializer, or refused, across inline and row-store encodings and rescaling.
 */
class FlixEnrichmentStateCompatibilityTest {

    private static final int KEYS = 500;

    /** Key {@code i}: the extremes, zero, and keys spread over the key groups. */
    private static long key(int i) {
        return switch (i) {
            case 0 -> Long.MIN_VALUE;
            case 1 -> Long.MAX_VALUE;
            case 2 -> 0L;
            default -> (i - 250L) * 0x9E3779B97F4AL + 1;
        };
    }

    /** Long payload {@code i}: among them the bits of NOT_FOUND and of the inline escape value. */
    private static long longPayload(int i) {
        return switch (i % 4) {
            case 0 -> FlixIndex.NOT_FOUND;
            case 1 -> InlinePayloads.ESCAPED;
            default -> i * 7_000_003L - 5;
        };
    }

    private static <P> FlixEnrichmentOperator<Update, Lookup, P> operator(TypeSerializer<P> serializer,
                                                                         Function<Update, P> payload) {
        return new FlixEnrichmentOperator<>(u -> u.payload == null ? null : payload.apply(u), serializer,
                Harnesses.LOOKUP_SERIALIZER, LookupKind.EXACT, l -> l.hi, Harnesses.RANGE_LIMIT, 64, 0,
                FlushPolicy.TIMER,
                IndexSettings.defaults().withBackend(Backend.CPU).withThreads(1), FlixEnrichment.REJECTED);
    }

    private static FlixEnrichmentOperator<Update, Lookup, Long> longOperator(TypeSerializer<Long> serializer) {
        return operator(serializer, u -> longPayload(Integer.parseInt(u.payload)));
    }

    /** Writes update {@code "i"} of every key at a parallelism, and snapshots each subtask into one state. */
    private static <P> OperatorSubtaskState load(Supplier<FlixEnrichmentOperator<Update, Lookup, P>> operators,
                                                 int parallelism) throws Exception {
        final OperatorSubtaskState[] snapshots = new OperatorSubtaskState[parallelism];
        for (int subtask = 0; subtask < parallelism; subtask++) {
            try (var harness = Harnesses.harness(operators.get(), parallelism, subtask)) {
                harness.open();
                for (int i = 0; i < KEYS; i++) {
                    if (Harnesses.subtaskOf(key(i), parallelism) == subtask) {
                        harness.processElement1(new StreamRecord<>(Update.upsert(key(i), Integer.toString(i))));
                    }
                }
                harness.prepareSnapshotPreBarrier(1);
                snapshots[subtask] = harness.snapshot(1, 1);
            }
        }
        return AbstractStreamOperatorTestHarness.repackageState(snapshots);
    }

    /** Restores the state at a parallelism and looks up every key: what each subtask found. */
    private static <P> Map<Long, P> restoreAndLookUpAll(
            Supplier<FlixEnrichmentOperator<Update, Lookup, P>> operators, OperatorSubtaskState state,
            int fromParallelism, int parallelism) throws Exception {
        final Map<Long, P> found = new TreeMap<>();
        for (int subtask = 0; subtask < parallelism; subtask++) {
            try (KeyedTwoInputStreamOperatorTestHarness<Long, Update, Lookup, Enriched<Lookup, P>> harness =
                         Harnesses.harness(operators.get(), parallelism, subtask)) {
                harness.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(
                        state, Harnesses.MAX_PARALLELISM, fromParallelism, parallelism, subtask));
                harness.open();
                for (int i = 0; i < KEYS; i++) {
                    if (Harnesses.subtaskOf(key(i), parallelism) == subtask) {
                        harness.processElement2(new StreamRecord<>(new Lookup(i, key(i), key(i))));
                    }
                }
                harness.prepareSnapshotPreBarrier(2);
                for (Enriched<Lookup, P> e : harness.extractOutputValues()) {
                    found.put(e.event.key, e.payload);
                }
                assertTrue(harness.getSideOutput(FlixEnrichment.REJECTED) == null
                        || harness.getSideOutput(FlixEnrichment.REJECTED).isEmpty());
            }
        }
        return found;
    }

    private static <P> Map<Long, P> expected(LongFunction<P> payloadOfIndex) {
        final Map<Long, P> expected = new TreeMap<>();
        for (int i = 0; i < KEYS; i++) {
            expected.put(key(i), payloadOfIndex.apply(i));
        }
        return expected;
    }

    @Test
    void longPayloadsRestoredIntoStringPayloadsFailNamingBothTypes() throws Exception {
        final OperatorSubtaskState state = load(() -> longOperator(LongSerializer.INSTANCE), 1);
        try (var harness = Harnesses.harness(operator(StringSerializer.INSTANCE, u -> u.payload), 1, 0)) {
            final Exception e = assertThrows(Exception.class, () -> {
                harness.initializeState(state);
                harness.open();
            });
            final StateMigrationException cause = causeOf(e, StateMigrationException.class);
            final String message = cause.getMessage();
            assertTrue(message.contains(LongSerializer.class.getName()) && message.contains("java.lang.Long")
                    && message.contains(StringSerializer.class.getName()) && message.contains("java.lang.String"),
                    message);
        }
    }

    @Test
    void aPojoWithAnAddedFieldMigratesAtAnyParallelism() throws Exception {
        final TypeSerializer<Product> before = pojoSerializerWithout("stock");
        final TypeSerializer<Product> after =
                TypeInformation.of(Product.class).createSerializer(new SerializerConfigImpl());
        final OperatorSubtaskState state = load(() -> operator(before,
                u -> new Product(Long.parseLong(u.payload), "product " + u.payload, 99)), 2);
        final Map<Long, Product> expected = expected(i -> new Product(i, "product " + i, 0));
        for (int parallelism : new int[] {1, 2, 3}) {
            assertEquals(expected, restoreAndLookUpAll(() -> operator(after, u -> new Product(
                    Long.parseLong(u.payload), "product " + u.payload, 7)), state, 2, parallelism),
                    "the field the old serializer did not write takes its default, parallelism " + parallelism);
        }
    }

    @Test
    void migratedPayloadsAreWrittenWithTheNewSerializer() throws Exception {
        final TypeSerializer<Product> before = pojoSerializerWithout("stock");
        final TypeSerializer<Product> after =
                TypeInformation.of(Product.class).createSerializer(new SerializerConfigImpl());
        final OperatorSubtaskState old = load(() -> operator(before,
                u -> new Product(Long.parseLong(u.payload), "product " + u.payload, 99)), 1);
        // restore with migration, update half the keys with the new field, snapshot again
        final OperatorSubtaskState migrated;
        try (var harness = Harnesses.harness(operator(after, u -> new Product(
                Long.parseLong(u.payload), "new " + u.payload, 5)), 1, 0)) {
            harness.initializeState(old);
            harness.open();
            for (int i = 0; i < KEYS; i += 2) {
                harness.processElement1(new StreamRecord<>(Update.upsert(key(i), Integer.toString(i))));
            }
            harness.prepareSnapshotPreBarrier(2);
            migrated = harness.snapshot(2, 2);
        }
        final Map<Long, Product> expected =
                expected(i -> i % 2 == 0 ? new Product(i, "new " + i, 5) : new Product(i, "product " + i, 0));
        assertEquals(expected, restoreAndLookUpAll(() -> operator(after, u -> null), migrated, 1, 2));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
            "FIXED, VARIABLE", // inline -> row store, the same bytes
            "VARIABLE, FIXED", // row store -> inline, the same bytes
            "FIXED, TEXT",     // inline -> row store, migrated
            "TEXT, FIXED",     // row store -> inline, migrated
            "TEXT, ADOPTING",  // a reconfigured serializer: TEXT, in the row store
            "FIXED, ADOPTING", // a reconfigured serializer: FIXED, inline
            "VARIABLE, TEXT"}) // row store -> row store, migrated
    void payloadsMoveBetweenInlineAndTheRowStore(LongCodecSerializer.Layout from, LongCodecSerializer.Layout to)
            throws Exception {
        final OperatorSubtaskState state = load(() -> longOperator(new LongCodecSerializer(from)), 2);
        final Map<Long, Long> expected = expected(i -> longPayload((int) i));
        for (int parallelism : new int[] {1, 3}) {
            assertEquals(expected, restoreAndLookUpAll(() -> longOperator(new LongCodecSerializer(to)), state, 2,
                    parallelism), "parallelism " + parallelism);
        }
        // the restored operator's own snapshot holds the payloads as the serializer in use writes them (a
        // reconfigured one: the layout it adopted), with that serializer's snapshot
        final OperatorSubtaskState again;
        try (var harness = Harnesses.harness(longOperator(new LongCodecSerializer(to)), 1, 0)) {
            harness.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(
                    state, Harnesses.MAX_PARALLELISM, 2, 1, 0));
            harness.open();
            harness.prepareSnapshotPreBarrier(2);
            again = harness.snapshot(2, 2);
        }
        assertEquals(expected, restoreAndLookUpAll(() -> longOperator(new LongCodecSerializer(
                LongCodecSerializer.Layout.TEXT)), again, 1, 1));
    }

    @Test
    void aFixedLengthThatNoLongerFitsInlineIsRefusedNamingTheKey() throws Exception {
        // payloads of the row store, and a serializer that resolves as compatible as is but stores 8 bytes inline
        final OperatorSubtaskState state = load(() -> operator(new LongCodecSerializer(LongCodecSerializer.Layout.TEXT),
                u -> (long) Integer.parseInt(u.payload)), 1);
        final FlixEnrichmentOperator<Update, Lookup, Long> fixedClaimingText = operator(
                new TextClaimingFixed(), u -> 0L);
        try (var harness = Harnesses.harness(fixedClaimingText, 1, 0)) {
            final Exception e = assertThrows(Exception.class, () -> {
                harness.initializeState(state);
                harness.open();
            });
            final java.io.IOException cause = causeOf(e, java.io.IOException.class);
            assertTrue(cause.getMessage().contains("key ") && cause.getMessage().contains("in the row store")
                    && cause.getMessage().contains("inline in 8 bytes"), cause.getMessage());
        }
    }

    @Test
    void aPayloadTheOldSerializerCannotReadFailsTheMigrationNamingTheKey() throws Exception {
        final OperatorSubtaskState state = load(() -> operator(PoisonStringSerializer.INSTANCE,
                u -> u.payload.equals("7") ? PoisonStringSerializer.CURSE + " seven" : "p" + u.payload), 1);
        try (var harness = Harnesses.harness(operator(new MigratingStringSerializer(), u -> u.payload), 1, 0)) {
            final Exception e = assertThrows(Exception.class, () -> {
                harness.initializeState(state);
                harness.open();
            });
            final java.io.IOException cause = causeOf(e, java.io.IOException.class);
            assertTrue(cause.getMessage().contains("the payload of key " + key(7) + " ")
                    && cause.getMessage().contains(PoisonStringSerializer.class.getName())
                    && cause.getMessage().contains(MigratingStringSerializer.class.getName()), cause.getMessage());
        }
        // with the serializer that wrote it the state restores, the unreadable payload kept
        assertEquals(KEYS, restoreAndCount(state));
    }

    private static long restoreAndCount(OperatorSubtaskState state) throws Exception {
        final FlixEnrichmentOperator<Update, Lookup, String> restored =
                operator(PoisonStringSerializer.INSTANCE, u -> u.payload);
        try (var harness = Harnesses.harness(restored, 1, 0)) {
            harness.initializeState(state);
            harness.open();
            return restored.indexSize();
        }
    }

    /** Strings, whose snapshot asks for a migration from any other serializer of strings. */
    public static final class MigratingStringSerializer
            extends org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton<String> {
        @Override public boolean isImmutableType() { return true; }
        @Override public String createInstance() { return ""; }
        @Override public String copy(String from) { return from; }
        @Override public String copy(String from, String reuse) { return from; }
        @Override public int getLength() { return -1; }
        @Override public void serialize(String r, org.apache.flink.core.memory.DataOutputView t)
                throws java.io.IOException { StringSerializer.INSTANCE.serialize(r, t); }
        @Override public String deserialize(org.apache.flink.core.memory.DataInputView s)
                throws java.io.IOException { return StringSerializer.INSTANCE.deserialize(s); }
        @Override public String deserialize(String reuse, org.apache.flink.core.memory.DataInputView s)
                throws java.io.IOException { return deserialize(s); }
        @Override public void copy(org.apache.flink.core.memory.DataInputView s,
                                   org.apache.flink.core.memory.DataOutputView t) throws java.io.IOException {
            StringSerializer.INSTANCE.copy(s, t);
        }
        @Override public org.apache.flink.api.common.typeutils.TypeSerializerSnapshot<String> snapshotConfiguration() {
            return new MigratingSnapshot();
        }
    }

    public static final class MigratingSnapshot
            extends org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot<String> {
        public MigratingSnapshot() {
            super(MigratingStringSerializer::new);
        }

        @Override
        public org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility<String>
                resolveSchemaCompatibility(org.apache.flink.api.common.typeutils.TypeSerializerSnapshot<String> old) {
            return org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility.compatibleAfterMigration();
        }
    }

    /** Declares 8 fixed bytes and resolves as compatible as is with TEXT: a serializer that lies. */
    public static final class TextClaimingFixed extends TypeSerializer<Long> {
        private final LongCodecSerializer fixed = new LongCodecSerializer(LongCodecSerializer.Layout.FIXED);
        @Override public boolean isImmutableType() { return true; }
        @Override public TypeSerializer<Long> duplicate() { return this; }
        @Override public Long createInstance() { return 0L; }
        @Override public Long copy(Long from) { return from; }
        @Override public Long copy(Long from, Long reuse) { return from; }
        @Override public int getLength() { return 8; }
        @Override public void serialize(Long r, org.apache.flink.core.memory.DataOutputView t)
                throws java.io.IOException { fixed.serialize(r, t); }
        @Override public Long deserialize(org.apache.flink.core.memory.DataInputView s) throws java.io.IOException {
            return fixed.deserialize(s);
        }
        @Override public Long deserialize(Long reuse, org.apache.flink.core.memory.DataInputView s)
                throws java.io.IOException { return deserialize(s); }
        @Override public void copy(org.apache.flink.core.memory.DataInputView s,
                                   org.apache.flink.core.memory.DataOutputView t) throws java.io.IOException {
            fixed.copy(s, t);
        }
        @Override public boolean equals(Object o) { return o instanceof TextClaimingFixed; }
        @Override public int hashCode() { return 1; }
        @Override public org.apache.flink.api.common.typeutils.TypeSerializerSnapshot<Long> snapshotConfiguration() {
            return new ClaimingSnapshot();
        }
    }

    public static final class ClaimingSnapshot
            extends org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot<Long> {
        public ClaimingSnapshot() {
            super(TextClaimingFixed::new);
        }

        @Override
        public org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility<Long>
                resolveSchemaCompatibility(org.apache.flink.api.common.typeutils.TypeSerializerSnapshot<Long> old) {
            return org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility.compatibleAsIs();
        }
    }

    /** A POJO serializer of {@link Product} as an older version of it, without one field, made it. */
    @SuppressWarnings("unchecked")
    private static TypeSerializer<Product> pojoSerializerWithout(String missing) throws Exception {
        final List<PojoField> fields = new java.util.ArrayList<>();
        for (String name : new String[] {"id", "name", "stock"}) {
            if (!name.equals(missing)) {
                fields.add(new PojoField(Product.class.getField(name), name.equals("name") ? Types.STRING
                        : name.equals("id") ? Types.LONG : Types.INT));
            }
        }
        return new PojoTypeInfo<>(Product.class, fields).createSerializer(new SerializerConfigImpl());
    }

    private static <T extends Throwable> T causeOf(Throwable e, Class<T> type) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        throw new AssertionError("no " + type.getSimpleName() + " in the causes of " + e, e);
    }
}
