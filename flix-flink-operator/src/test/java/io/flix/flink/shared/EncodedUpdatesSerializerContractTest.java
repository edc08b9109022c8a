package io.flix.flink.shared;

import org.apache.flink.api.common.typeutils.SerializerTestBase;
import org.apache.flink.api.common.typeutils.TypeSerializer;

import java.util.SplittableRandom;

/** Flink's serializer contract (copies, sequences, snapshots, duplicates) on {@link EncodedUpdatesSerializer}. */
class EncodedUpdatesSerializerContractTest extends SerializerTestBase<EncodedUpdates> {

    @Override
    protected TypeSerializer<EncodedUpdates> createSerializer() {
        return new EncodedUpdatesSerializer();
    }

    @Override
    protected int getLength() {
        return -1;
    }

    @Override
    protected Class<EncodedUpdates> getTypeClass() {
        return EncodedUpdates.class;
    }

    @Override
    protected EncodedUpdates[] getTestData() {
        final SplittableRandom random = new SplittableRandom(7);
        final EncodedUpdates[] blocks = new EncodedUpdates[12];
        for (int b = 0; b < blocks.length; b++) {
            blocks[b] = EncodedUpdatesSerializerTest.randomBlock(random, b == 0 ? 0 : random.nextInt(1, 3000));
        }
        return blocks;
    }
}
