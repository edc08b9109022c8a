package io.flix.flink.state;

import io.flix.flink.payload.PayloadStore;

import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Chunks written and read back: every pair, and whether the keys came in ascending order. */
class KeyGroupSnapshotCodecTest {

    /** Writes {@code keys} as chunks of {@code chunk} keys each, every key's payload "p" + key. */
    private static byte[] chunks(long[] keys, int chunk) throws Exception {
        final PayloadStore<String> store = PayloadStore.of(StringSerializer.INSTANCE, 16);
        final long[] values = new long[keys.length];
        for (int i = 0; i < keys.length; i++) {
            values[i] = store.encode("p" + keys[i]);
        }
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final KeyGroupSnapshotCodec.Writer<String> writer = new KeyGroupSnapshotCodec.Writer<>(store);
        for (int from = 0; from < keys.length; from += chunk) {
            writer.writeKeyGroup(out, keys, values, from, Math.min(keys.length, from + chunk));
        }
        return out.toByteArray();
    }

    private static KeyGroupSnapshotCodec.Reader<String> read(byte[] bytes, int chunks) throws Exception {
        final KeyGroupSnapshotCodec.Reader<String> reader = new KeyGroupSnapshotCodec.Reader<>(
                StringSerializer.INSTANCE, KeyGroupSnapshotCodecTest.class.getClassLoader(), 16);
        final DataInputDeserializer in = new DataInputDeserializer(bytes);
        for (int c = 0; c < chunks; c++) {
            reader.readKeyGroup(c, in);
        }
        return reader;
    }

    @Test
    void keysWrittenInAscendingOrderOverSeveralChunksAreReadAsAscending() throws Exception {
        final long[] keys = new long[5_000];
        for (int i = 0; i < keys.length; i++) {
            keys[i] = Long.MIN_VALUE + 3L * i;
        }
        final KeyGroupSnapshotCodec.Reader<String> reader = read(chunks(keys, 1_500), 4);
        assertEquals(keys.length, reader.count());
        assertTrue(reader.keysAscending());
        final long[] read = java.util.Arrays.copyOf(reader.keys(), reader.count());
        assertArrayEquals(keys, read);
        for (int i = 0; i < keys.length; i += 499) {
            assertEquals("p" + keys[i], reader.payloads().payload(reader.values()[i], keys[i]));
        }
    }

    @Test
    void aKeyBelowTheOneBeforeItMakesTheKeysUnordered() throws Exception {
        // ascending within each chunk, not across them: as the keyed mode's key groups are
        final long[] keys = {10, 20, 30, 5, 15, 25};
        final KeyGroupSnapshotCodec.Reader<String> reader = read(chunks(keys, 3), 2);
        assertEquals(6, reader.count());
        assertFalse(reader.keysAscending());
        assertEquals("p15", reader.payloads().payload(reader.values()[4], 15));
    }

    @Test
    void equalNeighboursStayAscending() throws Exception {
        final KeyGroupSnapshotCodec.Reader<String> reader = read(chunks(new long[] {1, 1}, 1), 2);
        assertTrue(reader.keysAscending());
        final KeyGroupSnapshotCodec.Reader<String> none = read(new byte[0], 0);
        assertTrue(none.keysAscending(), "no keys: nothing out of order");
    }
}
