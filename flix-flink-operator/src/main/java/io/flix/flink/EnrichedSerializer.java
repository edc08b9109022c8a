package io.flix.flink;

import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeutils.CompositeTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.EnumSerializer;
import org.apache.flink.api.common.typeutils.base.ListSerializer;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.java.typeutils.runtime.PojoSerializer;
import org.apache.flink.api.java.typeutils.runtime.PojoSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The serializer of {@link Enriched}: the bytes of Flink's POJO serializer for the same type (so state and records
 * written by either are read by the other), written and copied by plain code instead of reflection. With object reuse
 * off Flink copies every record between chained operators, so a chained enrichment copies each of its records: the
 * POJO serializer's reflective copy was a large share of such a job's time.
 *
 * <p>Layout, as {@link PojoSerializer} writes a POJO of its exact class: a flags byte (1: null, 2: not null), then per
 * field in name order ({@code event}, {@code kind}, {@code matchedKey}, {@code matches}, {@code payload}) a null flag
 * and, where not null, the field's serializer's bytes. {@code kind} is its constant's ordinal as an int, as
 * {@link EnumSerializer} writes it; {@code matches} a size and each match, itself a POJO ({@code key}, {@code payload}).
 *
 * @param <E> lookup events
 * @param <P> payloads
 */
public final class EnrichedSerializer<E, P> extends TypeSerializer<Enriched<E, P>> {

    private static final long serialVersionUID = 1L;
    /** {@link PojoSerializer}'s flags. */
    private static final int IS_NULL = 1;
    private static final int NO_SUBCLASS = 2;
    private static final LookupKind[] KINDS = LookupKind.values();

    private final TypeSerializer<E> eventSerializer;
    private final TypeSerializer<P> payloadSerializer;

    public EnrichedSerializer(TypeSerializer<E> eventSerializer, TypeSerializer<P> payloadSerializer) {
        this.eventSerializer = Objects.requireNonNull(eventSerializer, "eventSerializer");
        this.payloadSerializer = Objects.requireNonNull(payloadSerializer, "payloadSerializer");
    }

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public TypeSerializer<Enriched<E, P>> duplicate() {
        final TypeSerializer<E> events = eventSerializer.duplicate();
        final TypeSerializer<P> payloads = payloadSerializer.duplicate();
        return events == eventSerializer && payloads == payloadSerializer ? this
                : new EnrichedSerializer<>(events, payloads);
    }

    @Override
    public Enriched<E, P> createInstance() {
        return new Enriched<>();
    }

    @Override
    public Enriched<E, P> copy(Enriched<E, P> from) {
        if (from == null) {
            return null;
        }
        return new Enriched<>(from.event == null ? null : eventSerializer.copy(from.event), from.kind,
                from.payload == null ? null : payloadSerializer.copy(from.payload), from.matchedKey,
                from.matches == null ? null : copyMatches(from.matches));
    }

    private List<Match<P>> copyMatches(List<Match<P>> matches) {
        final List<Match<P>> copy = new ArrayList<>(matches.size());
        for (Match<P> m : matches) {
            copy.add(m == null ? null : new Match<>(m.key, m.payload == null ? null : payloadSerializer.copy(m.payload)));
        }
        return copy;
    }

    @Override
    public Enriched<E, P> copy(Enriched<E, P> from, Enriched<E, P> reuse) {
        return copy(from);
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(Enriched<E, P> record, DataOutputView target) throws IOException {
        if (record == null) {
            target.writeByte(IS_NULL);
            return;
        }
        target.writeByte(NO_SUBCLASS);
        if (present(record.event, target)) {
            eventSerializer.serialize(record.event, target);
        }
        if (present(record.kind, target)) {
            target.writeInt(record.kind.ordinal());
        }
        if (present(record.matchedKey, target)) {
            target.writeLong(record.matchedKey);
        }
        if (present(record.matches, target)) {
            target.writeInt(record.matches.size());
            for (Match<P> m : record.matches) {
                if (m == null) {
                    target.writeByte(IS_NULL);
                    continue;
                }
                target.writeByte(NO_SUBCLASS);
                target.writeBoolean(false);
                target.writeLong(m.key);
                if (present(m.payload, target)) {
                    payloadSerializer.serialize(m.payload, target);
                }
            }
        }
        if (present(record.payload, target)) {
            payloadSerializer.serialize(record.payload, target);
        }
    }

    /** Writes the field's null flag; true where the field's bytes follow. */
    private static boolean present(Object field, DataOutputView target) throws IOException {
        target.writeBoolean(field == null);
        return field != null;
    }

    @Override
    public Enriched<E, P> deserialize(DataInputView source) throws IOException {
        final int flags = source.readByte();
        if ((flags & IS_NULL) != 0) {
            return null;
        }
        checkFlags(flags, "an enriched record");
        final Enriched<E, P> record = new Enriched<>();
        record.event = source.readBoolean() ? null : eventSerializer.deserialize(source);
        record.kind = source.readBoolean() ? null : kindOf(source.readInt());
        record.matchedKey = source.readBoolean() ? null : source.readLong();
        if (!source.readBoolean()) {
            final int size = source.readInt();
            if (size < 0) {
                throw new IOException("an enriched record's matches have a negative size: " + size);
            }
            final List<Match<P>> matches = new ArrayList<>(size);
            for (int i = 0; i < size; i++) {
                matches.add(readMatch(source));
            }
            record.matches = matches;
        }
        record.payload = source.readBoolean() ? null : payloadSerializer.deserialize(source);
        return record;
    }

    private Match<P> readMatch(DataInputView source) throws IOException {
        final int flags = source.readByte();
        if ((flags & IS_NULL) != 0) {
            return null;
        }
        checkFlags(flags, "a match");
        final Match<P> m = new Match<>();
        if (!source.readBoolean()) {
            m.key = source.readLong();
        }
        m.payload = source.readBoolean() ? null : payloadSerializer.deserialize(source);
        return m;
    }

    /** Enriched and Match are final: the POJO serializer never writes them as a subclass. */
    private static void checkFlags(int flags, String what) throws IOException {
        if (flags != NO_SUBCLASS) {
            throw new IOException(what + " was written with flags " + flags + " (a subclass?); " + NO_SUBCLASS
                    + " expected");
        }
    }

    private static LookupKind kindOf(int ordinal) throws IOException {
        if (ordinal < 0 || ordinal >= KINDS.length) {
            throw new IOException("an enriched record's lookup kind " + ordinal + " is not one of the "
                    + KINDS.length + " kinds");
        }
        return KINDS[ordinal];
    }

    @Override
    public Enriched<E, P> deserialize(Enriched<E, P> reuse, DataInputView source) throws IOException {
        return deserialize(source);
    }

    @Override
    public void copy(DataInputView source, DataOutputView target) throws IOException {
        serialize(deserialize(source), target);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EnrichedSerializer<?, ?> s && eventSerializer.equals(s.eventSerializer)
                && payloadSerializer.equals(s.payloadSerializer);
    }

    @Override
    public int hashCode() {
        return 31 * eventSerializer.hashCode() + payloadSerializer.hashCode();
    }

    @Override
    public TypeSerializerSnapshot<Enriched<E, P>> snapshotConfiguration() {
        return new Snapshot<>(this);
    }

    /**
     * The Flink POJO serializer that writes the same bytes: what state written before this serializer existed was
     * written with.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    PojoSerializer<Enriched<E, P>> equivalentPojoSerializer() {
        try {
            final SerializerConfigImpl config = new SerializerConfigImpl();
            final PojoSerializer<Match<P>> match = new PojoSerializer<>((Class<Match<P>>) (Class) Match.class,
                    new TypeSerializer<?>[] {LongSerializer.INSTANCE, payloadSerializer},
                    new Field[] {Match.class.getField("key"), Match.class.getField("payload")}, config);
            return new PojoSerializer<>((Class<Enriched<E, P>>) (Class) Enriched.class,
                    new TypeSerializer<?>[] {eventSerializer, new EnumSerializer<>(LookupKind.class),
                            LongSerializer.INSTANCE, new ListSerializer<>(match), payloadSerializer},
                    new Field[] {Enriched.class.getField("event"), Enriched.class.getField("kind"),
                            Enriched.class.getField("matchedKey"), Enriched.class.getField("matches"),
                            Enriched.class.getField("payload")}, config);
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The serializer's snapshot: the event's and the payload's serializers. State written by Flink's POJO serializer
     * (before this serializer, or from a type information Flink derived itself) is resolved by the POJO serializer's
     * own rules against {@link #equivalentPojoSerializer}: as is where those say so (the bytes are the same),
     * otherwise migrated or refused as they decide.
     */
    public static final class Snapshot<E, P>
            extends CompositeTypeSerializerSnapshot<Enriched<E, P>, EnrichedSerializer<E, P>> {

        private static final int VERSION = 1;

        /** For Flink, which reads the snapshot into this. */
        public Snapshot() {
        }

        Snapshot(EnrichedSerializer<E, P> serializer) {
            super(serializer);
        }

        @Override
        protected int getCurrentOuterSnapshotVersion() {
            return VERSION;
        }

        @Override
        protected TypeSerializer<?>[] getNestedSerializers(EnrichedSerializer<E, P> outer) {
            return new TypeSerializer<?>[] {outer.eventSerializer, outer.payloadSerializer};
        }

        @Override
        @SuppressWarnings("unchecked")
        protected EnrichedSerializer<E, P> createOuterSerializerWithNestedSerializers(TypeSerializer<?>[] nested) {
            return new EnrichedSerializer<>((TypeSerializer<E>) nested[0], (TypeSerializer<P>) nested[1]);
        }

        @Override
        public TypeSerializerSchemaCompatibility<Enriched<E, P>> resolveSchemaCompatibility(
                TypeSerializerSnapshot<Enriched<E, P>> oldSnapshot) {
            if (!(oldSnapshot instanceof PojoSerializerSnapshot<Enriched<E, P>> pojo)) {
                return super.resolveSchemaCompatibility(oldSnapshot);
            }
            final EnrichedSerializer<E, P> current = (EnrichedSerializer<E, P>) restoreSerializer();
            final TypeSerializerSchemaCompatibility<Enriched<E, P>> asPojo =
                    current.equivalentPojoSerializer().snapshotConfiguration().resolveSchemaCompatibility(pojo);
            if (asPojo.isCompatibleAsIs()) {
                return TypeSerializerSchemaCompatibility.compatibleAsIs();
            }
            // a reconfigured POJO serializer is not this one: the old bytes are read with the old serializer
            return asPojo.isIncompatible() ? TypeSerializerSchemaCompatibility.incompatible()
                    : TypeSerializerSchemaCompatibility.compatibleAfterMigration();
        }
    }
}
