package io.flix.flink;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;

/**
 * {@code Long}s in one of several layouts, whose snapshots resolve against each other the way real serializers'
 * do: the same bytes are compatible as is, other bytes compatible after migration, and {@link Layout#ADOPTING}
 * takes on the layout it finds (a reconfigured serializer).
 */
public final class LongCodecSerializer extends TypeSerializer<Long> {

    public enum Layout {
        /** 8 bytes, big-endian, declared fixed: stored inline. */
        FIXED,
        /** The same 8 bytes, declared of variable length: stored in the row store. */
        VARIABLE,
        /** Decimal text: stored in the row store. */
        TEXT,
        /** Writes as {@link #FIXED}; restored, it takes on the layout of the state. */
        ADOPTING
    }

    final Layout layout;

    public LongCodecSerializer(Layout layout) {
        this.layout = layout;
    }

    private boolean bigEndian() {
        return layout != Layout.TEXT;
    }

    @Override
    public boolean isImmutableType() {
        return true;
    }

    @Override
    public TypeSerializer<Long> duplicate() {
        return this;
    }

    @Override
    public Long createInstance() {
        return 0L;
    }

    @Override
    public Long copy(Long from) {
        return from;
    }

    @Override
    public Long copy(Long from, Long reuse) {
        return from;
    }

    @Override
    public int getLength() {
        return layout == Layout.FIXED || layout == Layout.ADOPTING ? 8 : -1;
    }

    @Override
    public void serialize(Long record, DataOutputView target) throws IOException {
        if (bigEndian()) {
            target.writeLong(record);
        } else {
            target.writeUTF(Long.toString(record));
        }
    }

    @Override
    public Long deserialize(DataInputView source) throws IOException {
        return bigEndian() ? source.readLong() : Long.parseLong(source.readUTF());
    }

    @Override
    public Long deserialize(Long reuse, DataInputView source) throws IOException {
        return deserialize(source);
    }

    @Override
    public void copy(DataInputView source, DataOutputView target) throws IOException {
        serialize(deserialize(source), target);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LongCodecSerializer s && s.layout == layout;
    }

    @Override
    public int hashCode() {
        return layout.hashCode();
    }

    @Override
    public TypeSerializerSnapshot<Long> snapshotConfiguration() {
        return new Snapshot(layout);
    }

    public static final class Snapshot implements TypeSerializerSnapshot<Long> {
        private Layout layout;

        public Snapshot() {
        }

        Snapshot(Layout layout) {
            this.layout = layout;
        }

        @Override
        public int getCurrentVersion() {
            return 1;
        }

        @Override
        public void writeSnapshot(DataOutputView out) throws IOException {
            out.writeUTF(layout.name());
        }

        @Override
        public void readSnapshot(int readVersion, DataInputView in, ClassLoader classLoader) throws IOException {
            layout = Layout.valueOf(in.readUTF());
        }

        @Override
        public TypeSerializer<Long> restoreSerializer() {
            return new LongCodecSerializer(layout);
        }

        @Override
        public TypeSerializerSchemaCompatibility<Long> resolveSchemaCompatibility(
                TypeSerializerSnapshot<Long> oldSnapshot) {
            if (!(oldSnapshot instanceof Snapshot old)) {
                return TypeSerializerSchemaCompatibility.incompatible();
            }
            if (layout == Layout.ADOPTING) {
                return TypeSerializerSchemaCompatibility.compatibleWithReconfiguredSerializer(
                        new LongCodecSerializer(old.layout));
            }
            final boolean sameBytes = (layout == Layout.TEXT) == (old.layout == Layout.TEXT);
            return sameBytes ? TypeSerializerSchemaCompatibility.compatibleAsIs()
                    : TypeSerializerSchemaCompatibility.compatibleAfterMigration();
        }
    }
}
