package io.flix.flink.shared;

import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;

/**
 * Serializes {@link EncodedUpdates} blocks on their way from the encoders to the dimension's writers: the count, the
 * length of the bytes, the bytes. The update stream is broadcast, so every writer subtask receives every block, but
 * only one per task manager applies them: on the task thread of a writer that does not apply
 * ({@link #skipBlocksOnThisThread}), a block's bytes are skipped where they lie in the network buffer, not copied
 * out, and the block read holds its count alone ({@link EncodedUpdates#data} null).
 *
 * <p>The blocks travel only between the two operators: no state holds them (the writers need aligned checkpoints).
 */
public final class EncodedUpdatesSerializer extends TypeSerializerSingleton<EncodedUpdates> {

    private static final long serialVersionUID = 1L;

    public static final EncodedUpdatesSerializer INSTANCE = new EncodedUpdatesSerializer();

    private static final ThreadLocal<Boolean> SKIPPING = ThreadLocal.withInitial(() -> Boolean.FALSE);

    /**
     * From now on, blocks read on this thread (a writer's task thread, which reads its network input) have their
     * bytes skipped ({@code true}) or read ({@code false}, as on any other thread).
     */
    static void skipBlocksOnThisThread(boolean skip) {
        if (skip) {
            SKIPPING.set(Boolean.TRUE);
        } else {
            SKIPPING.remove();
        }
    }

    @Override
    public boolean isImmutableType() {
        return false;
    }

    @Override
    public EncodedUpdates createInstance() {
        return new EncodedUpdates(0, new byte[0]);
    }

    @Override
    public EncodedUpdates copy(EncodedUpdates from) {
        return new EncodedUpdates(from.count, from.data == null ? null : from.data.clone());
    }

    @Override
    public EncodedUpdates copy(EncodedUpdates from, EncodedUpdates reuse) {
        return copy(from);
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(EncodedUpdates block, DataOutputView target) throws IOException {
        if (block.data == null) {
            throw new IOException("a block of " + block.count + " encoded updates without its bytes (read by a "
                    + "writer that skips them) cannot be sent on");
        }
        target.writeInt(block.count);
        target.writeInt(block.data.length);
        target.write(block.data);
    }

    @Override
    public EncodedUpdates deserialize(DataInputView source) throws IOException {
        final int count = source.readInt();
        final int length = checkedLength(count, source.readInt());
        if (SKIPPING.get()) {
            source.skipBytesToRead(length);
            return new EncodedUpdates(count, null);
        }
        final byte[] data = new byte[length];
        source.readFully(data);
        return new EncodedUpdates(count, data);
    }

    @Override
    public EncodedUpdates deserialize(EncodedUpdates reuse, DataInputView source) throws IOException {
        return deserialize(source);
    }

    @Override
    public void copy(DataInputView source, DataOutputView target) throws IOException {
        final int count = source.readInt();
        final int length = checkedLength(count, source.readInt());
        target.writeInt(count);
        target.writeInt(length);
        target.write(source, length);
    }

    private static int checkedLength(int count, int length) throws IOException {
        if (count < 0 || length < 0) {
            throw new IOException("a block of encoded updates with " + count + " updates and " + length
                    + " bytes: not written by " + EncodedUpdatesSerializer.class.getSimpleName());
        }
        return length;
    }

    @Override
    public TypeSerializerSnapshot<EncodedUpdates> snapshotConfiguration() {
        return new Snapshot();
    }

    /** The serializer has no configuration. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<EncodedUpdates> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
