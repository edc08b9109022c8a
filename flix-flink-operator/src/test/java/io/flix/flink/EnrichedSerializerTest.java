package io.flix.flink;

import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;
import org.apache.flink.api.java.typeutils.runtime.PojoSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link EnrichedSerializer} against Flink's POJO serializer of the same type: the same bytes both ways, state
 * written by the POJO serializer resolved and read, deep copies; and its refusal of bytes it cannot read.
 */
class EnrichedSerializerTest {

    private static final SerializerConfigImpl CONFIG = new SerializerConfigImpl();
    private static final TypeInformation<Lookup> EVENTS = TypeInformation.of(Lookup.class);
    private static final TypeInformation<Product> PRODUCTS = TypeInformation.of(Product.class);

    /** The type information Flink derives for {@code Enriched<Lookup, Product>}: a plain POJO type. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static PojoTypeInfo<Enriched<Lookup, Product>> flinksPojoType() {
        final EnrichedTypeInfo<Lookup, Product> ours = new EnrichedTypeInfo<>(EVENTS, PRODUCTS);
        final List<org.apache.flink.api.java.typeutils.PojoField> fields = new ArrayList<>();
        for (int i = 0; i < ours.getArity(); i++) {
            fields.add(ours.getPojoFieldAt(i));
        }
        return new PojoTypeInfo<>((Class<Enriched<Lookup, Product>>) (Class) Enriched.class, fields);
    }

    private static TypeSerializer<Enriched<Lookup, Product>> ours() {
        return FlixEnrichment.enrichedType(EVENTS, PRODUCTS).createSerializer(CONFIG);
    }

    private static TypeSerializer<Enriched<Lookup, Product>> flinks() {
        return flinksPojoType().createSerializer(CONFIG);
    }

    private static Product product(Random random) {
        return random.nextInt(5) == 0 ? null
                : new Product(random.nextLong(), random.nextInt(4) == 0 ? null : "p" + random.nextInt(), random.nextInt());
    }

    /** Records of every kind with random fields, nulls among them. */
    private static List<Enriched<Lookup, Product>> randomRecords(long seed, int count) {
        final Random random = new Random(seed);
        final LookupKind[] kinds = LookupKind.values();
        final List<Enriched<Lookup, Product>> records = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            final LookupKind kind = random.nextInt(10) == 0 ? null : kinds[random.nextInt(kinds.length)];
            final Lookup event = random.nextInt(10) == 0 ? null
                    : new Lookup(random.nextLong(), random.nextLong(), random.nextLong());
            List<Match<Product>> matches = null;
            if (kind == LookupKind.RANGE && random.nextInt(8) != 0) {
                matches = new ArrayList<>();
                for (int m = random.nextInt(6); m > 0; m--) {
                    matches.add(random.nextInt(9) == 0 ? null : new Match<>(random.nextLong(), product(random)));
                }
            }
            final Long matchedKey = kind == LookupKind.FLOOR || kind == LookupKind.CEILING ? random.nextLong() : null;
            records.add(new Enriched<>(event, kind, kind == LookupKind.RANGE ? null : product(random), matchedKey,
                    matches));
        }
        records.add(null);
        return records;
    }

    private static byte[] bytes(TypeSerializer<Enriched<Lookup, Product>> serializer,
                                List<Enriched<Lookup, Product>> records) throws IOException {
        final DataOutputSerializer out = new DataOutputSerializer(1024);
        for (Enriched<Lookup, Product> record : records) {
            serializer.serialize(record, out);
        }
        return out.getCopyOfBuffer();
    }

    private static List<Enriched<Lookup, Product>> read(TypeSerializer<Enriched<Lookup, Product>> serializer,
                                                      byte[] bytes, int count) throws IOException {
        final DataInputDeserializer in = new DataInputDeserializer(bytes);
        final List<Enriched<Lookup, Product>> records = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            records.add(serializer.deserialize(in));
        }
        assertEquals(0, in.available(), "bytes left after the records");
        return records;
    }

    @Test
    void theTypeInformationIsFlinksPojoTypeWithOurSerializer() {
        final TypeInformation<Enriched<Lookup, Product>> type = FlixEnrichment.enrichedType(EVENTS, PRODUCTS);
        assertInstanceOf(PojoTypeInfo.class, type);
        assertEquals(flinksPojoType(), type);
        assertInstanceOf(EnrichedSerializer.class, type.createSerializer(CONFIG));
        assertInstanceOf(PojoSerializer.class, flinks());
    }

    @Test
    void bothModesEmitWithIt() {
        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        final DataStream<Long> updates = env.fromSequence(0, 9);
        final DataStream<Long> lookups = env.fromSequence(0, 9);
        final List<DataStream<Enriched<Long, Long>>> built = List.of(
                FlixEnrichment.shared(updates, lookups).key(u -> u, l -> l).payload(u -> u, Types.LONG).build(),
                FlixEnrichment.of(updates, lookups).key(u -> u, l -> l).payload(u -> u, Types.LONG).build());
        for (DataStream<Enriched<Long, Long>> stream : built) {
            assertInstanceOf(EnrichedTypeInfo.class, stream.getType());
            assertInstanceOf(EnrichedSerializer.class, stream.getType().createSerializer(CONFIG));
        }
    }

    @Test
    void writesTheBytesOfFlinksPojoSerializerAndReadsThem() throws IOException {
        for (long seed = 1; seed <= 20; seed++) {
            final List<Enriched<Lookup, Product>> records = randomRecords(seed, 200);
            final byte[] ourBytes = bytes(ours(), records);
            assertArrayEquals(bytes(flinks(), records), ourBytes, "seed " + seed);
            assertEquals(records, read(ours(), ourBytes, records.size()), "seed " + seed);
            assertEquals(records, read(flinks(), ourBytes, records.size()), "seed " + seed);
        }
    }

    @Test
    void aLongPayloadAsTheOperatorsEmitIt() throws IOException {
        final TypeSerializer<Enriched<Lookup, Long>> ours =
                FlixEnrichment.enrichedType(EVENTS, Types.LONG).createSerializer(CONFIG);
        @SuppressWarnings("unchecked")
        final TypeSerializer<Enriched<Lookup, Long>> flinks = (TypeSerializer<Enriched<Lookup, Long>>)
                (TypeSerializer<?>) ((EnrichedSerializer<Lookup, Long>) ours).equivalentPojoSerializer();
        final Enriched<Lookup, Long> hit = new Enriched<>(new Lookup(1, 2, 2), LookupKind.EXACT, -5L, null, null);
        final DataOutputSerializer a = new DataOutputSerializer(64);
        final DataOutputSerializer b = new DataOutputSerializer(64);
        ours.serialize(hit, a);
        flinks.serialize(hit, b);
        assertArrayEquals(b.getCopyOfBuffer(), a.getCopyOfBuffer());
        assertEquals(hit, ours.deserialize(new DataInputDeserializer(a.getCopyOfBuffer())));
    }

    @Test
    void copiesDeeply() {
        final List<Match<Product>> matches = new ArrayList<>(List.of(new Match<>(3, new Product(3, "three", 1))));
        final Enriched<Lookup, Product> range =
                new Enriched<>(new Lookup(1, 0, 9), LookupKind.RANGE, null, null, matches);
        final Enriched<Lookup, Product> copy = ours().copy(range);
        assertEquals(range, copy);
        assertNotSame(range.event, copy.event);
        assertNotSame(range.matches, copy.matches);
        assertNotSame(range.matches.get(0), copy.matches.get(0));
        assertNotSame(range.matches.get(0).payload, copy.matches.get(0).payload);
        copy.event.key = 42;
        copy.matches.get(0).payload.stock = 99;
        assertEquals(0, range.event.key);
        assertEquals(1, range.matches.get(0).payload.stock);

        final Enriched<Lookup, Product> exact =
                new Enriched<>(new Lookup(2, 5, 5), LookupKind.EXACT, new Product(5, "five", 5), null, null);
        final Enriched<Lookup, Product> exactCopy = ours().copy(exact);
        assertNotSame(exact.payload, exactCopy.payload);
        assertEquals(exact, exactCopy);
        assertNull(ours().copy(null));
    }

    @Test
    void resolvesStateWrittenByFlinksPojoSerializerAsIsAndReadsIt() throws IOException {
        final TypeSerializerSnapshot<Enriched<Lookup, Product>> written = flinks().snapshotConfiguration();
        final TypeSerializerSnapshot<Enriched<Lookup, Product>> restoredOld = roundTrip(written);
        final TypeSerializerSchemaCompatibility<Enriched<Lookup, Product>> compatibility =
                ours().snapshotConfiguration().resolveSchemaCompatibility(restoredOld);
        assertTrue(compatibility.isCompatibleAsIs(), compatibility.toString());
        final List<Enriched<Lookup, Product>> records = randomRecords(99, 300);
        assertEquals(records, read(ours(), bytes(flinks(), records), records.size()));
    }

    @Test
    void migratesStateWhoseEventTypeChanged() throws IOException {
        // the state was written with events of another POJO type under the same field: the POJO rules decide
        final PojoTypeInfo<Enriched<Product, Product>> otherEvents =
                (PojoTypeInfo<Enriched<Product, Product>>) FlixEnrichment.enrichedType(PRODUCTS, PRODUCTS);
        @SuppressWarnings({"unchecked", "rawtypes"})
        final TypeSerializerSnapshot<Enriched<Lookup, Product>> written = (TypeSerializerSnapshot) roundTrip(
                ((EnrichedSerializer<Product, Product>) otherEvents.createSerializer(CONFIG))
                        .equivalentPojoSerializer().snapshotConfiguration());
        final TypeSerializerSchemaCompatibility<Enriched<Lookup, Product>> compatibility =
                ours().snapshotConfiguration().resolveSchemaCompatibility(written);
        assertTrue(compatibility.isIncompatible() || compatibility.isCompatibleAfterMigration(),
                compatibility.toString());
    }

    @Test
    void resolvesItsOwnSnapshotAsIs() throws IOException {
        final TypeSerializerSnapshot<Enriched<Lookup, Product>> restored =
                roundTrip(ours().snapshotConfiguration());
        assertEquals(ours(), restored.restoreSerializer());
        assertTrue(ours().snapshotConfiguration().resolveSchemaCompatibility(restored).isCompatibleAsIs());
        final TypeSerializerSnapshot<Enriched<Lookup, Long>> longPayloads = roundTrip(
                FlixEnrichment.enrichedType(EVENTS, Types.LONG).createSerializer(CONFIG).snapshotConfiguration());
        @SuppressWarnings({"unchecked", "rawtypes"})
        final TypeSerializerSchemaCompatibility<Enriched<Lookup, Product>> other =
                ours().snapshotConfiguration().resolveSchemaCompatibility((TypeSerializerSnapshot) longPayloads);
        assertTrue(other.isIncompatible(), other.toString());
    }

    @Test
    void refusesBytesItCannotRead() {
        final IOException subclass = assertThrows(IOException.class,
                () -> ours().deserialize(new DataInputDeserializer(new byte[] {4, 0})));
        assertTrue(subclass.getMessage().contains("flags 4"), subclass.getMessage());
        final DataOutputSerializer out = new DataOutputSerializer(32);
        final IOException kind = assertThrows(IOException.class, () -> {
            out.writeByte(2);
            out.writeBoolean(true); // no event
            out.writeBoolean(false);
            out.writeInt(LookupKind.values().length);
            ours().deserialize(new DataInputDeserializer(out.getCopyOfBuffer()));
        });
        assertTrue(kind.getMessage().contains("lookup kind " + LookupKind.values().length), kind.getMessage());
    }

    private static <T> TypeSerializerSnapshot<T> roundTrip(TypeSerializerSnapshot<T> snapshot) throws IOException {
        final DataOutputSerializer out = new DataOutputSerializer(256);
        TypeSerializerSnapshot.writeVersionedSnapshot(out, snapshot);
        return TypeSerializerSnapshot.readVersionedSnapshot(new DataInputDeserializer(out.getCopyOfBuffer()),
                EnrichedSerializerTest.class.getClassLoader());
    }
}
