package io.flix.flink;

import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.typeutils.EnumTypeInfo;
import org.apache.flink.api.java.typeutils.ListTypeInfo;
import org.apache.flink.api.java.typeutils.PojoField;
import org.apache.flink.api.java.typeutils.PojoTypeInfo;

import java.util.List;

/**
 * Type information of {@link Enriched}: the POJO type Flink would derive (fields, nested types, the Table API's view
 * of it), with {@link EnrichedSerializer} as its serializer in place of the reflective POJO serializer. Equal to the
 * POJO type information of the same fields, whose serializer writes the same bytes.
 *
 * @param <E> lookup events
 * @param <P> payloads
 */
public final class EnrichedTypeInfo<E, P> extends PojoTypeInfo<Enriched<E, P>> {

    private static final long serialVersionUID = 1L;

    private final TypeInformation<E> eventType;
    private final TypeInformation<P> payloadType;

    @SuppressWarnings({"unchecked", "rawtypes"})
    public EnrichedTypeInfo(TypeInformation<E> eventType, TypeInformation<P> payloadType) {
        super((Class<Enriched<E, P>>) (Class) Enriched.class, fields(eventType, payloadType));
        this.eventType = eventType;
        this.payloadType = payloadType;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static List<PojoField> fields(TypeInformation<?> eventType, TypeInformation<?> payloadType) {
        try {
            final TypeInformation<Match<?>> matchType = new PojoTypeInfo<>((Class<Match<?>>) (Class) Match.class,
                    List.of(new PojoField(Match.class.getField("key"), Types.LONG),
                            new PojoField(Match.class.getField("payload"), payloadType)));
            return List.of(
                    new PojoField(Enriched.class.getField("event"), eventType),
                    new PojoField(Enriched.class.getField("kind"), new EnumTypeInfo<>(LookupKind.class)),
                    new PojoField(Enriched.class.getField("payload"), payloadType),
                    new PojoField(Enriched.class.getField("matchedKey"), Types.LONG),
                    new PojoField(Enriched.class.getField("matches"), new ListTypeInfo<>(matchType)));
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public TypeSerializer<Enriched<E, P>> createSerializer(SerializerConfig config) {
        return new EnrichedSerializer<>(eventType.createSerializer(config), payloadType.createSerializer(config));
    }
}
