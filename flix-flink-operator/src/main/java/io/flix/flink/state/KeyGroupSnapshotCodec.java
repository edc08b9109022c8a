package io.flix.flink.state;

import io.flix.flink.payload.PayloadStore;
import io.flix.flink.payload.RowStore;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.util.StateMigrationException;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;

/**
 * One key group's chunk of the dimension's checkpoint: a header, then the group's keys with their payloads' bytes
 * as the payload serializer wrote them, in key order.
 *
 * <h2>Format 2 (written)</h2>
 * <pre>
 * int  format = 2
 * int  count                       keys in the chunk
 * where count &gt; 0:
 *   int  encoding                  how the writer stored payloads: 1..8 inline of that length, 0 the row store
 *   int  n, n bytes                the payload serializer's snapshot (TypeSerializerSnapshot.writeVersionedSnapshot)
 * count times:
 *   long key, int length, length bytes
 * </pre>
 * The serializer snapshot goes in every chunk that holds keys, since after rescaling a subtask reads chunks written
 * by others; an empty chunk holds none. Restore resolves the job's payload serializer against it as Flink's own
 * state backends do ({@link TypeSerializerSnapshot#resolveSchemaCompatibility} of the new serializer's snapshot,
 * given the old one): compatible as is, the bytes are restored; compatible after migration, each payload is read
 * with the old serializer ({@link TypeSerializerSnapshot#restoreSerializer}) and written with the new one;
 * compatible with a reconfigured serializer, that serializer is used from then on; incompatible, restore fails with
 * a {@link StateMigrationException} naming both serializers. The payloads are restored into the encoding of the
 * serializer in use, so a change between inline and the row store needs nothing more; a payload whose bytes do not
 * fit (inline, another length) fails the restore, naming the key and both encodings. A payload that does not
 * deserialize with the old serializer cannot migrate and fails the restore, naming its key.
 *
 * <h2>Format 1 (read only)</h2>
 * {@code int format = 1, int count}, then the pairs as above; no serializer snapshot, no encoding. Written by
 * versions before the serializer snapshot was kept: the pairs are read with the job's payload serializer as it is,
 * as those versions did.
 */
public final class KeyGroupSnapshotCodec {

    /** The format written. */
    static final int FORMAT = 2;
    /** The format without a serializer snapshot, still read. */
    static final int FORMAT_WITHOUT_SERIALIZER = 1;
    /** A chunk is handed to the stream in pieces of about this size. */
    private static final int PIECE_BYTES = 1 << 20;

    private KeyGroupSnapshotCodec() {
    }

    /** The key group of a key, as Flink's key-by assigns it to a {@code Long} key. */
    static int keyGroupOf(long key, int maxParallelism) {
        return KeyGroupRangeAssignment.computeKeyGroupForKeyHash(Long.hashCode(key), maxParallelism);
    }

    /**
     * Sorts pairs by key group, key order kept within each (a counting sort, so that a writer reads them in
     * sequence): {@code groupedKeys} and {@code groupedValues} receive the pairs; the result holds each key group's
     * first position, and at {@code maxParallelism} the count.
     */
    public static int[] groupByKeyGroup(long[] keys, long[] values, int n, int maxParallelism, long[] groupedKeys,
                                 long[] groupedValues) {
        final int[] keyGroupStart = new int[maxParallelism + 1];
        for (int i = 0; i < n; i++) {
            keyGroupStart[keyGroupOf(keys[i], maxParallelism) + 1]++;
        }
        for (int g = 0; g < maxParallelism; g++) {
            keyGroupStart[g + 1] += keyGroupStart[g];
        }
        final int[] fill = Arrays.copyOf(keyGroupStart, maxParallelism);
        for (int i = 0; i < n; i++) {
            final int at = fill[keyGroupOf(keys[i], maxParallelism)]++;
            groupedKeys[at] = keys[i];
            groupedValues[at] = values[i];
        }
        return keyGroupStart;
    }

    /** Writes the chunks of one snapshot, with the payload store's serializer snapshot and encoding. */
    public static final class Writer<P> {
        private final PayloadStore<P> payloads;
        private final byte[] serializerSnapshot;
        private final DataOutputSerializer chunk = new DataOutputSerializer(1 << 16);

        public Writer(PayloadStore<P> payloads) throws IOException {
            this.payloads = payloads;
            final DataOutputSerializer snapshot = new DataOutputSerializer(256);
            TypeSerializerSnapshot.writeVersionedSnapshot(snapshot, payloads.serializer().snapshotConfiguration());
            this.serializerSnapshot = snapshot.getCopyOfBuffer();
        }

        /** Writes the chunk of the pairs {@code [from, to)} (one key group's, in key order) to {@code out}. */
        public void writeKeyGroup(OutputStream out, long[] keys, long[] values, int from, int to) throws IOException {
            chunk.clear();
            chunk.writeInt(FORMAT);
            chunk.writeInt(to - from);
            if (to > from) {
                chunk.writeInt(payloads.encoding());
                chunk.writeInt(serializerSnapshot.length);
                chunk.write(serializerSnapshot);
            }
            for (int s = from; s < to; s++) {
                chunk.writeLong(keys[s]);
                payloads.writePayload(values[s], keys[s], chunk);
                if (chunk.length() >= PIECE_BYTES) {
                    out.write(chunk.getSharedBuffer(), 0, chunk.length());
                    chunk.clear();
                }
            }
            out.write(chunk.getSharedBuffer(), 0, chunk.length());
        }
    }

    /**
     * Reads the chunks of a restore into a payload store, settled at the first chunk that holds keys (the job's
     * serializer, or the reconfigured one compatibility resolution gives), and collects the keys with the values
     * the index is to map them to.
     */
    public static final class Reader<P> {
        private final TypeSerializer<P> configured;
        private final ClassLoader classLoader;
        private final int batchCapacity;
        private PayloadStore<P> payloads;
        /** The last serializer snapshot read, and what it resolved to: chunks mostly share one. */
        private byte[] lastSnapshot;
        private Resolution<P> lastResolution;

        private long[] keys = new long[1024];
        private long[] values = new long[1024];
        private int count;
        /** No key read was below the one before it. */
        private boolean ascending = true;
        private byte[] bytes = new byte[256];
        private final DataInputDeserializer migrateIn = new DataInputDeserializer();
        private final DataOutputSerializer migrateOut = new DataOutputSerializer(256);

        /**
         * @param configured    the job's payload serializer
         * @param classLoader   the user code class loader, for serializer snapshots
         * @param batchCapacity passed to the payload store
         */
        public Reader(TypeSerializer<P> configured, ClassLoader classLoader, int batchCapacity) {
            this.configured = configured;
            this.classLoader = classLoader;
            this.batchCapacity = batchCapacity;
        }

        /** Reads one key group's chunk; a {@link BlockDataInput} is read fastest. */
        public void readKeyGroup(int keyGroup, DataInputView in) throws IOException, StateMigrationException {
            final int format = in.readInt();
            if (format != FORMAT && format != FORMAT_WITHOUT_SERIALIZER) {
                throw new IOException("key group " + keyGroup + " has state format " + format + "; this version "
                        + "reads formats " + FORMAT_WITHOUT_SERIALIZER + " and " + FORMAT);
            }
            final int pairs = in.readInt();
            if (pairs < 0) {
                throw new IOException("key group " + keyGroup + " claims " + pairs + " keys");
            }
            if (pairs == 0) {
                return;
            }
            final Resolution<P> resolution;
            final int encoding;
            if (format == FORMAT_WITHOUT_SERIALIZER) {
                resolution = new Resolution<>(configured, null);
                encoding = -1;
            } else {
                encoding = in.readInt();
                if (encoding < 0 || encoding > 8) {
                    throw new IOException("key group " + keyGroup + " has payload encoding " + encoding
                            + ", expected 0 (row store) to 8");
                }
                final byte[] snapshot = new byte[in.readInt()];
                in.readFully(snapshot);
                resolution = resolve(keyGroup, snapshot);
            }
            settle(keyGroup, resolution.serializer);
            final BlockDataInput block = in instanceof BlockDataInput ? (BlockDataInput) in : null;
            if ((long) count + pairs > keys.length) { // room for the chunk at once, not by doubling
                final int room = (int) Math.min(Integer.MAX_VALUE - 8, (long) count + pairs);
                keys = Arrays.copyOf(keys, room);
                values = Arrays.copyOf(values, room);
            }
            for (int c = 0; c < pairs; c++) {
                final long key = in.readLong();
                final int length = in.readInt();
                if (length < 0 || length > RowStore.MAX_ROW_BYTES) {
                    throw new IOException("key " + key + " of key group " + keyGroup + " claims a payload of "
                            + length + " bytes");
                }
                final long value;
                if (resolution.migrateFrom == null && block != null && length <= block.blockBytes()) {
                    // restored from the block in place: no copy per payload
                    final byte[] window = block.window(length);
                    value = restore(keyGroup, encoding, key, window, block.windowStart(), length);
                } else {
                    if (length > bytes.length) {
                        bytes = new byte[Math.max(length, bytes.length * 2)];
                    }
                    in.readFully(bytes, 0, length);
                    value = resolution.migrateFrom == null ? restore(keyGroup, encoding, key, bytes, 0, length)
                            : migrate(keyGroup, resolution, key, length);
                }
                add(key, value);
            }
        }

        /** The payload store holding what was read (empty where nothing was). */
        public PayloadStore<P> payloads() {
            if (payloads == null) {
                payloads = PayloadStore.of(configured, batchCapacity);
            }
            return payloads;
        }

        /** The keys read, in the order read; {@link #count()} of them. */
        public long[] keys() {
            return keys;
        }

        /** Per key read, the value the index maps it to. */
        public long[] values() {
            return values;
        }

        public int count() {
            return count;
        }

        /**
         * Whether the keys were read in ascending order (the shared mode's writer and the SQL table's snapshots write
         * them so), so that the index they go to may skip its sort.
         */
        public boolean keysAscending() {
            return ascending;
        }

        private Resolution<P> resolve(int keyGroup, byte[] snapshot) throws IOException, StateMigrationException {
            if (Arrays.equals(snapshot, lastSnapshot)) {
                return lastResolution;
            }
            final TypeSerializerSnapshot<P> old;
            try {
                old = TypeSerializerSnapshot.readVersionedSnapshot(
                        new DataInputDeserializer(snapshot), classLoader);
            } catch (IOException | RuntimeException | LinkageError e) {
                throw new IOException("the payload serializer snapshot of key group " + keyGroup
                        + " cannot be read (is the class that wrote it on the class path?): " + e, e);
            }
            final TypeSerializer<P> oldSerializer = old.restoreSerializer();
            final TypeSerializerSchemaCompatibility<P> compatibility =
                    configured.snapshotConfiguration().resolveSchemaCompatibility(old);
            final Resolution<P> resolution;
            if (compatibility.isCompatibleAsIs()) {
                resolution = new Resolution<>(configured, null);
            } else if (compatibility.isCompatibleWithReconfiguredSerializer()) {
                resolution = new Resolution<>(compatibility.getReconfiguredSerializer(), null);
            } else if (compatibility.isCompatibleAfterMigration()) {
                resolution = new Resolution<>(configured, oldSerializer);
            } else {
                throw new StateMigrationException("the payloads of this state were written by "
                        + describe(oldSerializer) + ", and the job's payload serializer " + describe(configured)
                        + " is incompatible with it (key group " + keyGroup + "): restore with the old payload "
                        + "type, or start without this state");
            }
            lastSnapshot = snapshot;
            lastResolution = resolution;
            return resolution;
        }

        private void settle(int keyGroup, TypeSerializer<P> serializer) throws IOException {
            if (payloads == null) {
                payloads = PayloadStore.of(serializer, batchCapacity);
            } else if (!payloads.serializer().equals(serializer)) {
                throw new IOException("key group " + keyGroup + " resolves to the payload serializer "
                        + describe(serializer) + ", earlier ones to " + describe(payloads.serializer())
                        + ": the chunks of one restore must agree");
            }
        }

        private long restore(int keyGroup, int encoding, long key, byte[] source, int offset, int length)
                throws IOException {
            try {
                return payloads.restore(key, source, offset, length);
            } catch (IOException e) {
                throw new IOException("key group " + keyGroup + (encoding < 0 ? ""
                        : ", stored " + PayloadStore.describeEncoding(encoding)) + ": " + e.getMessage(), e);
            }
        }

        private long migrate(int keyGroup, Resolution<P> resolution, long key, int length) throws IOException {
            migrateIn.setBuffer(bytes, 0, length);
            final P payload;
            try {
                payload = resolution.migrateFrom.deserialize(migrateIn);
            } catch (Exception | StackOverflowError e) {
                throw new IOException("the payload of key " + key + " (key group " + keyGroup + ") does not "
                        + "deserialize with " + describe(resolution.migrateFrom) + ", which wrote it, so it cannot "
                        + "migrate to " + describe(resolution.serializer) + ": restore with the old payload type, "
                        + "replace or delete the key, and take a new savepoint: " + e, e);
            }
            migrateOut.clear();
            try {
                resolution.serializer.serialize(payload, migrateOut);
            } catch (Exception | StackOverflowError e) {
                throw new IOException("the payload of key " + key + " (key group " + keyGroup + "), read with "
                        + describe(resolution.migrateFrom) + ", does not serialize with "
                        + describe(resolution.serializer) + ": " + e, e);
            }
            return payloads.restore(key, migrateOut.getSharedBuffer(), 0, migrateOut.length());
        }

        private void add(long key, long value) {
            if (count == keys.length) {
                keys = Arrays.copyOf(keys, count * 2);
                values = Arrays.copyOf(values, count * 2);
            }
            if (count > 0 && key < keys[count - 1]) {
                ascending = false;
            }
            keys[count] = key;
            values[count] = value;
            count++;
        }
    }

    /** What a serializer snapshot resolves to: the serializer to use, and the one to migrate from (or null). */
    private record Resolution<P>(TypeSerializer<P> serializer, TypeSerializer<P> migrateFrom) {
    }

    /** A serializer and the type it makes, for messages. */
    static String describe(TypeSerializer<?> serializer) {
        String type;
        try {
            final Object instance = serializer.createInstance();
            type = instance == null ? null : instance.getClass().getName();
        } catch (RuntimeException | LinkageError e) {
            type = null;
        }
        return serializer.getClass().getName() + (type == null ? "" : " (of " + type + ")");
    }
}
