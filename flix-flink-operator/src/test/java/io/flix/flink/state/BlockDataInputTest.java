package io.flix.flink.state;

import io.flix.flink.payload.PayloadStore;

import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.api.common.typeutils.base.array.BytePrimitiveArraySerializer;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The block reader decodes what {@code DataOutputStream} wrote exactly as {@code DataInputStream} does, however the
 * stream hands out its bytes and wherever a value crosses a block's end.
 */
class BlockDataInputTest {

    /** Hands out at most {@code most} bytes a read, as a network or checkpoint stream may. */
    private static InputStream trickle(byte[] bytes, int most) {
        return new FilterInputStream(new ByteArrayInputStream(bytes)) {
            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                return super.read(b, off, Math.min(len, most));
            }
        };
    }

    @Test
    void mixedValuesReadAsDataInputStreamReadsThemAtEveryBlockSizeAndTrickle() throws Exception {
        final SplittableRandom random = new SplittableRandom(7);
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final DataOutputStream out = new DataOutputStream(bytes);
        final int values = 3_000;
        final int[] kinds = new int[values];
        for (int i = 0; i < values; i++) {
            kinds[i] = random.nextInt(9);
            switch (kinds[i]) {
                case 0 -> out.writeLong(random.nextLong());
                case 1 -> out.writeInt(random.nextInt());
                case 2 -> out.writeShort(random.nextInt());
                case 3 -> out.writeByte(random.nextInt());
                case 4 -> out.writeBoolean(random.nextBoolean());
                case 5 -> out.writeDouble(random.nextDouble());
                case 6 -> out.writeFloat((float) random.nextDouble());
                case 7 -> out.writeUTF("value " + random.nextInt() + " \u00e9\u4e2d");
                default -> {
                    final byte[] field = new byte[random.nextInt(40)];
                    random.nextBytes(field);
                    out.writeInt(field.length);
                    out.write(field);
                }
            }
        }
        out.flush();
        final byte[] written = bytes.toByteArray();
        for (int block : new int[] {8, 13, 64, 1 << 16}) {
            for (int most : new int[] {1, 3, 7, Integer.MAX_VALUE}) {
                final DataInputStream expected = new DataInputStream(new ByteArrayInputStream(written));
                final BlockDataInput actual = new BlockDataInput(trickle(written, most), block);
                for (int i = 0; i < values; i++) {
                    final String at = "value " + i + ", block " + block + ", reads of " + most;
                    switch (kinds[i]) {
                        case 0 -> assertEquals(expected.readLong(), actual.readLong(), at);
                        case 1 -> assertEquals(expected.readInt(), actual.readInt(), at);
                        case 2 -> assertEquals(expected.readUnsignedShort(), actual.readUnsignedShort(), at);
                        case 3 -> assertEquals(expected.readByte(), actual.readByte(), at);
                        case 4 -> assertEquals(expected.readBoolean(), actual.readBoolean(), at);
                        case 5 -> assertEquals(expected.readDouble(), actual.readDouble(), at);
                        case 6 -> assertEquals(expected.readFloat(), actual.readFloat(), at);
                        case 7 -> assertEquals(expected.readUTF(), actual.readUTF(), at);
                        default -> {
                            final int length = expected.readInt();
                            assertEquals(length, actual.readInt(), at);
                            final byte[] want = new byte[length];
                            final byte[] got = new byte[length];
                            expected.readFully(want);
                            actual.readFully(got);
                            assertArrayEquals(want, got, at);
                        }
                    }
                }
                assertTrue(actual.atEnd(), "every byte read, block " + block + ", reads of " + most);
            }
        }
    }

    @Test
    void aValueCutShortByTheStreamsEndIsAnEofNotAWrongNumber() throws Exception {
        final BlockDataInput in = new BlockDataInput(new ByteArrayInputStream(new byte[] {1, 2, 3, 4, 5}), 8);
        assertEquals(0x01020304, in.readInt());
        final EOFException cut = assertThrows(EOFException.class, in::readLong);
        assertTrue(cut.getMessage().contains("1 bytes into a value of 8 bytes"), cut.getMessage());
        final BlockDataInput fields = new BlockDataInput(new ByteArrayInputStream(new byte[3]), 8);
        assertThrows(EOFException.class, () -> fields.readFully(new byte[4]));
        final BlockDataInput skip = new BlockDataInput(new ByteArrayInputStream(new byte[3]), 8);
        assertThrows(EOFException.class, () -> skip.skipBytesToRead(4));
    }

    @Test
    void bytesLeftAfterWhatWasReadAreNotTheEnd() throws Exception {
        final BlockDataInput in = new BlockDataInput(new ByteArrayInputStream(new byte[] {0, 0, 0, 9, 1}), 8);
        assertEquals(9, in.readInt());
        assertFalse(in.atEnd());
        assertEquals(1, in.readByte());
        assertTrue(in.atEnd());
    }

    /** Chunks read through the block reader: payloads read in place, and ones longer than a block read through. */
    @Test
    void chunksReadThroughBlocksGiveEveryPairBackIncludingPayloadsLongerThanABlock() throws Exception {
        final SplittableRandom random = new SplittableRandom(11);
        final PayloadStore<byte[]> store = PayloadStore.of(BytePrimitiveArraySerializer.INSTANCE, 16);
        final int n = 2_000;
        final long[] keys = new long[n];
        final long[] values = new long[n];
        final byte[][] payloads = new byte[n][];
        for (int i = 0; i < n; i++) {
            keys[i] = i == 0 ? Long.MIN_VALUE : keys[i - 1] + 1 + random.nextInt(1000);
            payloads[i] = new byte[random.nextInt(i % 100 == 0 ? 300 : 20)];
            random.nextBytes(payloads[i]);
            values[i] = store.encode(payloads[i]);
        }
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final KeyGroupSnapshotCodec.Writer<byte[]> writer = new KeyGroupSnapshotCodec.Writer<>(store);
        writer.writeKeyGroup(out, keys, values, 0, 700);
        writer.writeKeyGroup(out, keys, values, 700, n);
        final byte[] written = out.toByteArray();
        for (int block : new int[] {64, 1 << 20}) {
            final KeyGroupSnapshotCodec.Reader<byte[]> reader = new KeyGroupSnapshotCodec.Reader<>(
                    BytePrimitiveArraySerializer.INSTANCE, getClass().getClassLoader(), 16);
            final BlockDataInput in = new BlockDataInput(trickle(written, 5), block);
            reader.readKeyGroup(0, in);
            reader.readKeyGroup(1, in);
            assertTrue(in.atEnd());
            assertEquals(n, reader.count());
            assertTrue(reader.keysAscending());
            assertArrayEquals(keys, Arrays.copyOf(reader.keys(), n));
            for (int i = 0; i < n; i++) {
                assertArrayEquals(payloads[i], reader.payloads().payload(reader.values()[i], keys[i]),
                        "key " + keys[i] + ", block " + block);
            }
        }
    }

    @Test
    void inlinePayloadsReadInPlaceMatchWhatWasWritten() throws Exception {
        final PayloadStore<Long> store = PayloadStore.of(LongSerializer.INSTANCE, 16);
        final long[] keys = {-5, 0, 3, Long.MAX_VALUE};
        final long[] values = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            values[i] = store.encode(Long.MIN_VALUE + 17L * i);
        }
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        new KeyGroupSnapshotCodec.Writer<>(store).writeKeyGroup(out, keys, values, 0, keys.length);
        final KeyGroupSnapshotCodec.Reader<Long> reader = new KeyGroupSnapshotCodec.Reader<>(
                LongSerializer.INSTANCE, getClass().getClassLoader(), 16);
        reader.readKeyGroup(0, new BlockDataInput(trickle(out.toByteArray(), 3), 16));
        for (int i = 0; i < keys.length; i++) {
            assertEquals(Long.MIN_VALUE + 17L * i, reader.payloads().payload(reader.values()[i], keys[i]));
        }
    }
}
