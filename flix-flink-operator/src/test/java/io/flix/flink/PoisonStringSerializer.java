package io.flix.flink;

import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;

/**
 * Strings, except that {@link #POISON} fails to serialize, after writing part of its bytes (an update the operator
 * must reject, leaving nothing of it behind), and a string
 * starting with {@link #CURSE} serializes but does not deserialize (a stored payload a lookup cannot read).
 */
public final class PoisonStringSerializer extends TypeSerializerSingleton<String> {

    public static final String POISON = "poison";
    public static final String CURSE = "cursed";
    public static final PoisonStringSerializer INSTANCE = new PoisonStringSerializer();

    @Override
    public boolean isImmutableType() {
        return true;
    }

    @Override
    public String createInstance() {
        return "";
    }

    @Override
    public String copy(String from) {
        return from;
    }

    @Override
    public String copy(String from, String reuse) {
        return from;
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(String record, DataOutputView target) throws IOException {
        if (POISON.equals(record)) {
            target.writeLong(0x0102030405060708L);
            throw new IOException("cannot serialize " + record);
        }
        StringSerializer.INSTANCE.serialize(record, target);
    }

    @Override
    public String deserialize(DataInputView source) throws IOException {
        final String value = StringSerializer.INSTANCE.deserialize(source);
        if (value.startsWith(CURSE)) {
            throw new IOException("cannot read back " + value);
        }
        return value;
    }

    @Override
    public String deserialize(String reuse, DataInputView source) throws IOException {
        return deserialize(source);
    }

    @Override
    public void copy(DataInputView source, DataOutputView target) throws IOException {
        StringSerializer.INSTANCE.copy(source, target);
    }

    @Override
    public TypeSerializerSnapshot<String> snapshotConfiguration() {
        return new Snapshot();
    }

    public static final class Snapshot extends SimpleTypeSerializerSnapshot<String> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
