package io.flix.flink.table;

import io.flix.flink.table.snapshot.SnapshotDirectory;
import io.flix.flink.table.snapshot.SnapshotManifest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The snapshot directory on a local file system: only published manifests count, a data file that does not match
 * its manifest is refused, what failed writes leave is never read and is cleaned up, the newest two are kept.
 */
class SnapshotDirectoryTest {

    @TempDir
    Path dir;

    private static SnapshotManifest manifest(long sequence, String dataFile, long bytes, long crc,
                                             SnapshotDirectory.Written written) {
        return new SnapshotManifest(SnapshotManifest.FORMAT, sequence, "products", "id-1", "ROW<...>",
                new TreeMap<>(Map.of(0, 10 * sequence, 1, 20 * sequence)), written.keys(), written.pages(), dataFile,
                bytes, crc, "2026-11-24T00:00:00Z", "test", null);
    }

    /** Writes a snapshot whose data is {@code data}. */
    private static SnapshotManifest write(SnapshotDirectory directory, byte[] data) throws IOException {
        final long sequence = directory.nextSequence();
        return directory.write(sequence, out -> {
            out.write(data);
            return new SnapshotDirectory.Written(data.length, 1);
        }, (file, bytes, crc, written) -> manifest(sequence, file, bytes, crc, written));
    }

    private static byte[] read(SnapshotDirectory directory, SnapshotManifest manifest) throws Exception {
        final byte[][] read = new byte[1][];
        directory.read(manifest, (InputStream in) -> read[0] = in.readAllBytes());
        return read[0];
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aPublishedSnapshotIsListedWithItsManifestAndReadsBack() throws Exception {
        final SnapshotDirectory directory = new SnapshotDirectory(dir.resolve("snapshots").toString(),
                SnapshotDirectory.Streams.NONE);
        assertTrue(directory.published().isEmpty(), "no directory yet: nothing published");
        final SnapshotManifest written = write(directory, bytes("the rows"));
        final List<SnapshotDirectory.Published> published = directory.published();
        assertEquals(1, published.size());
        assertEquals(written, published.get(0).manifest());
        assertEquals(Map.of(0, 10L, 1, 20L), published.get(0).manifest().offsets());
        assertArrayEquals(bytes("the rows"), read(directory, written));
        assertEquals(2, directory.nextSequence());
        assertEquals(List.of(written.dataFile(), published.get(0).fileName()), directory.fileNames());
    }

    /**
     * A write that dies in its data file, and one that dies writing its manifest: neither is published, their files
     * never count, and the next snapshot takes a higher sequence number than either.
     */
    @Test
    void writesThatDieLeaveFilesThatNeverCount() throws Exception {
        final Path path = dir.resolve("snapshots");
        final SnapshotManifest complete = write(new SnapshotDirectory(path.toString(), SnapshotDirectory.Streams.NONE),
                bytes("complete"));

        final SnapshotDirectory diesInData = new SnapshotDirectory(path.toString(),
                (name, out) -> name.endsWith(SnapshotDirectory.DATA) ? new DyingOutputStream(out, 3) : out);
        final IOException dataDied = assertThrows(IOException.class, () -> write(diesInData, bytes("torn rows")));
        assertTrue(dataDied.getMessage().contains("simulated"), dataDied.getMessage());

        final SnapshotDirectory diesInManifest = new SnapshotDirectory(path.toString(),
                (name, out) -> name.endsWith(SnapshotDirectory.IN_PROGRESS) ? new DyingOutputStream(out, 20) : out);
        assertThrows(IOException.class, () -> write(diesInManifest, bytes("rows without a manifest")));

        final List<String> files = directory(path).fileNames();
        assertEquals(5, files.size(), "the complete snapshot's two files, a torn data file, a data file and a torn "
                + "in-progress manifest: " + files);
        assertEquals(1, files.stream().filter(f -> f.endsWith(SnapshotDirectory.IN_PROGRESS)).count(), files::toString);
        final List<SnapshotDirectory.Published> published = directory(path).published();
        assertEquals(1, published.size(), "only the complete snapshot counts");
        assertEquals(complete, published.get(0).manifest());
        assertEquals(4, directory(path).nextSequence(), "above the writes that died");
    }

    private static SnapshotDirectory directory(Path path) throws IOException {
        return new SnapshotDirectory(path.toString(), SnapshotDirectory.Streams.NONE);
    }

    /** A data file of another length, or of the same length with another byte, or missing, is refused. */
    @Test
    void aDataFileThatDoesNotMatchItsManifestIsRefused() throws Exception {
        final Path path = dir.resolve("snapshots");
        final SnapshotDirectory directory = directory(path);
        final SnapshotManifest manifest = write(directory, bytes("0123456789"));
        final Path data = path.resolve(manifest.dataFile());

        Files.write(data, bytes("012345678"));
        final Exception shorter = assertThrows(SnapshotDirectory.CorruptSnapshotException.class,
                () -> read(directory, manifest));
        assertTrue(shorter.getMessage().contains("holds 9 bytes, the manifest says 10"), shorter.getMessage());

        Files.write(data, bytes("0123456780"));
        final Exception flipped = assertThrows(SnapshotDirectory.CorruptSnapshotException.class,
                () -> read(directory, manifest));
        assertTrue(flipped.getMessage().contains("CRC-32C"), flipped.getMessage());

        final Exception unread = assertThrows(SnapshotDirectory.CorruptSnapshotException.class,
                () -> directory.read(manifest, in -> in.readNBytes(4)));
        assertTrue(unread.getMessage().contains("bytes after its last page"), unread.getMessage());

        Files.delete(data);
        final Exception missing = assertThrows(SnapshotDirectory.CorruptSnapshotException.class,
                () -> read(directory, manifest));
        assertTrue(missing.getMessage().contains("missing"), missing.getMessage());
    }

    /** A published manifest that does not parse (cut off, say) is listed as unreadable, with the reason. */
    @Test
    void anUnreadableManifestIsListedAsSuch() throws Exception {
        final Path path = dir.resolve("snapshots");
        final SnapshotDirectory directory = directory(path);
        write(directory, bytes("older"));
        final SnapshotManifest newest = write(directory, bytes("newer"));
        final String manifestName = newest.dataFile().replace(SnapshotDirectory.DATA, SnapshotDirectory.MANIFEST);
        final byte[] json = Files.readAllBytes(path.resolve(manifestName));
        Files.write(path.resolve(manifestName), Arrays.copyOf(json, json.length / 2));

        final List<SnapshotDirectory.Published> published = directory.published();
        assertEquals(2, published.size());
        assertNull(published.get(0).manifest(), "the newest, cut off");
        assertNotNull(published.get(0).unreadable());
        assertEquals(1, published.get(1).manifest().sequence());
    }

    /**
     * After each write the newest two complete snapshots stay; older ones and what failed writes of lower sequence
     * numbers left go; files of the newest kept sequence number or above stay (another writer may be writing them).
     */
    @Test
    void cleanUpKeepsTheNewestTwoCompleteSnapshots() throws Exception {
        final Path path = dir.resolve("snapshots");
        final SnapshotDirectory directory = directory(path);
        final SnapshotManifest first = write(directory, bytes("1"));
        final SnapshotDirectory dies = new SnapshotDirectory(path.toString(),
                (name, out) -> name.endsWith(SnapshotDirectory.DATA) ? new DyingOutputStream(out, 0) : out);
        assertThrows(IOException.class, () -> write(dies, bytes("2, torn")));
        final List<String> torn = directory.fileNames().stream().filter(f -> f.contains(String.format("-%019d-", 2L)))
                .toList();
        assertEquals(1, torn.size(), "the torn write's data file");
        final SnapshotManifest third = write(directory, bytes("3"));
        assertEquals(torn, directory.cleanUp(), "two complete snapshots: both stay; the torn write below them goes");
        final SnapshotManifest fourth = write(directory, bytes("4"));
        // a writer beside this one, still writing sequence 5
        final Path besides = path.resolve(String.format("snapshot-%019d-%s%s", 5L,
                "00000000-0000-0000-0000-000000000000", SnapshotDirectory.DATA));
        Files.write(besides, bytes("5, in progress"));

        final List<String> deleted = directory.cleanUp();
        assertEquals(List.of(first.dataFile().replace(SnapshotDirectory.DATA, SnapshotDirectory.MANIFEST),
                first.dataFile()), deleted, "the first snapshot, its manifest before its data");

        final List<SnapshotDirectory.Published> published = directory.published();
        assertEquals(List.of(fourth, third), published.stream().map(SnapshotDirectory.Published::manifest).toList());
        assertEquals(5, directory.fileNames().size(), "two snapshots and the other writer's file: "
                + directory.fileNames());
        assertTrue(Files.exists(besides));
        assertSame(null, published.get(0).unreadable());
    }
}
