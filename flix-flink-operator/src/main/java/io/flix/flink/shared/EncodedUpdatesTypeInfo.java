package io.flix.flink.shared;

import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Type information of {@link EncodedUpdates}: serialized by {@link EncodedUpdatesSerializer}. */
public final class EncodedUpdatesTypeInfo extends TypeInformation<EncodedUpdates> {

    private static final long serialVersionUID = 1L;

    @Override
    public boolean isBasicType() {
        return false;
    }

    @Override
    public boolean isTupleType() {
        return false;
    }

    @Override
    public int getArity() {
        return 1;
    }

    @Override
    public int getTotalFields() {
        return 1;
    }

    @Override
    public Class<EncodedUpdates> getTypeClass() {
        return EncodedUpdates.class;
    }

    @Override
    public boolean isKeyType() {
        return false;
    }

    @Override
    public TypeSerializer<EncodedUpdates> createSerializer(SerializerConfig config) {
        return EncodedUpdatesSerializer.INSTANCE;
    }

    @Override
    public String toString() {
        return "EncodedUpdates";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EncodedUpdatesTypeInfo;
    }

    @Override
    public int hashCode() {
        return EncodedUpdatesTypeInfo.class.hashCode();
    }

    @Override
    public boolean canEqual(Object o) {
        return o instanceof EncodedUpdatesTypeInfo;
    }
}
