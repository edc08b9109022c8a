package io.flix.flink.table.snapshot;

import org.apache.flink.core.fs.FSDataInputStream;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.FileNotFoundException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32C;
import java.util.zip.CheckedInputStream;

/**
 * A table's snapshot directory on a Flink {@link FileSystem}: writes snapshots so that a reader never takes a part of
 * one for the whole, lists the complete ones, reads one back with its checksum verified, and removes old ones.
 *
 * <h2>Files</h2>
 * A snapshot of sequence number {@code s}, written by one writer with its own random id {@code u}, is two files:
 * <ul>
 *   <li>{@code snapshot-<s>-<u>.data}: the rows ({@link io.flix.flink.state.KeyGroupSnapshotCodec} chunks);</li>
 *   <li>{@code snapshot-<s>-<u>.manifest}: the {@link SnapshotManifest}, naming the data file with its length and
 *       CRC-32C. It is written as {@code snapshot-<s>-<u>.manifest.inprogress} once the data file is closed, and
 *       published by renaming it.</li>
 * </ul>
 * A snapshot is complete where its manifest is published: that rename is the commit. A writer that dies before it
 * leaves a data file and perhaps an in-progress manifest, neither of which is ever read; a data file that does not
 * have its manifest's length and checksum is refused when read. The data file is not renamed: nothing reads it
 * before a published manifest names it, and on object stores (S3) a rename copies the whole object. Names are
 * unique per writer, so two writers at once (see {@link SnapshotWriter}) never write the same file.
 *
 * <h2>Cleaning up</h2>
 * After each snapshot it writes, the writer keeps the newest {@link #KEEP} complete snapshots and deletes every
 * other file of a lower sequence number than the newest kept one: older snapshots, and what writes that never
 * completed left behind. Files of the newest sequence number or above are left alone (another writer may be
 * writing them).
 */
public final class SnapshotDirectory {

    private static final Logger LOG = LoggerFactory.getLogger(SnapshotDirectory.class);

    /** Complete snapshots kept by {@link #cleanUp}. */
    static final int KEEP = 2;
    public static final String DATA = ".data";
    public static final String MANIFEST = ".manifest";
    public static final String IN_PROGRESS = ".manifest.inprogress";
    private static final Pattern NAME =
            Pattern.compile("snapshot-(\\d{19})-([0-9a-f-]{36})(\\.data|\\.manifest|\\.manifest\\.inprogress)");

    /** Wraps each stream the directory writes, by file name; the identity but in tests, which inject failures. */
    @FunctionalInterface
    public interface Streams {
        Streams NONE = (name, out) -> out;

        OutputStream wrap(String fileName, OutputStream out) throws IOException;
    }

    /** Writes a snapshot's data; returns the pages and keys written. */
    @FunctionalInterface
    public interface DataWriter {
        Written write(OutputStream out) throws IOException;
    }

    /** What a {@link DataWriter} wrote. */
    public record Written(long keys, int pages) {
    }

    /** Makes the manifest once the data file is complete. */
    @FunctionalInterface
    public interface ManifestMaker {
        SnapshotManifest make(String dataFile, long dataBytes, long dataCrc32c, Written written);
    }

    /** Reads a snapshot's data file, all of it. */
    @FunctionalInterface
    public interface DataReader {
        void read(InputStream in) throws Exception;
    }

    /** A published manifest of this directory, or why it cannot be read ({@code manifest} null). */
    public record Published(long sequence, String fileName, SnapshotManifest manifest, IOException unreadable) {
    }

    /** The data file does not match its manifest (missing, another length, another checksum, bytes left over). */
    public static final class CorruptSnapshotException extends IOException {
        private static final long serialVersionUID = 1L;

        public CorruptSnapshotException(String message) {
            super(message);
        }

        public CorruptSnapshotException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final Path directory;
    private final FileSystem fs;
    private final Streams streams;

    /**
     * @throws IOException where no Flink file system serves the path's scheme (a plugin missing, say)
     */
    public SnapshotDirectory(String path, Streams streams) throws IOException {
        this.directory = new Path(path);
        this.fs = directory.getFileSystem();
        this.streams = streams;
    }

    @Override
    public String toString() {
        return directory.toString();
    }

    /** The published manifests, newest (highest sequence) first; unreadable ones with the reason. */
    public List<Published> published() throws IOException {
        final List<Published> published = new ArrayList<>();
        for (FileStatus status : list()) {
            final String name = status.getPath().getName();
            final Matcher m = NAME.matcher(name);
            if (!m.matches() || !m.group(3).equals(MANIFEST)) {
                continue;
            }
            final long sequence = Long.parseLong(m.group(1));
            try {
                final SnapshotManifest manifest = SnapshotManifest.fromJson(readAll(status.getPath()));
                if (manifest.sequence() != sequence) {
                    throw new IOException("the manifest says sequence " + manifest.sequence());
                }
                published.add(new Published(sequence, name, manifest, null));
            } catch (IOException e) {
                published.add(new Published(sequence, name, null, e));
            }
        }
        published.sort(Comparator.comparingLong(Published::sequence).thenComparing(Published::fileName).reversed());
        return published;
    }

    /** One above the highest sequence number of any snapshot file here (complete or not), or 1. */
    public long nextSequence() throws IOException {
        long highest = 0;
        for (FileStatus status : list()) {
            final Matcher m = NAME.matcher(status.getPath().getName());
            if (m.matches()) {
                highest = Math.max(highest, Long.parseLong(m.group(1)));
            }
        }
        return highest + 1;
    }

    /**
     * Writes a snapshot of the given sequence number: the data file, then the manifest {@code maker} makes, written
     * under its in-progress name and published by a rename. Where anything fails, the snapshot is not published and
     * what was written stays until a later {@link #cleanUp}.
     */
    public SnapshotManifest write(long sequence, DataWriter data, ManifestMaker maker) throws IOException {
        fs.mkdirs(directory);
        final String prefix = String.format("snapshot-%019d-%s", sequence, UUID.randomUUID());
        final String dataFile = prefix + DATA;
        final CRC32C crc = new CRC32C();
        final Written written;
        final long bytes;
        // closing the outermost stream closes the file (once: some file systems' streams refuse a second close)
        try (CheckedCountingStream out = new CheckedCountingStream(streams.wrap(dataFile,
                fs.create(new Path(directory, dataFile), FileSystem.WriteMode.NO_OVERWRITE)), crc)) {
            written = data.write(out);
            out.flush();
            bytes = out.count;
        }
        final SnapshotManifest manifest = maker.make(dataFile, bytes, crc.getValue(), written);
        final Path inProgress = new Path(directory, prefix + IN_PROGRESS);
        try (OutputStream out = streams.wrap(prefix + IN_PROGRESS,
                fs.create(inProgress, FileSystem.WriteMode.NO_OVERWRITE))) {
            out.write(manifest.toJson());
        }
        final Path published = new Path(directory, prefix + MANIFEST);
        if (!fs.rename(inProgress, published)) {
            throw new IOException("the file system did not rename " + inProgress + " to " + published);
        }
        return manifest;
    }

    /**
     * Reads the data file of a snapshot: checks its length first, then hands it to {@code reader}, which must read it
     * to its end, then checks that nothing is left and that the checksum matches. Nothing read may be used before
     * this returns.
     *
     * @throws CorruptSnapshotException where the data file is missing or does not match the manifest
     */
    public void read(SnapshotManifest manifest, DataReader reader) throws Exception {
        final Path path = new Path(directory, manifest.dataFile());
        final long length;
        try {
            length = fs.getFileStatus(path).getLen();
        } catch (FileNotFoundException e) {
            throw new CorruptSnapshotException("its data file " + path + " is missing");
        }
        if (length != manifest.dataBytes()) {
            throw new CorruptSnapshotException("its data file " + path + " holds " + length + " bytes, the manifest "
                    + "says " + manifest.dataBytes());
        }
        final CRC32C crc = new CRC32C();
        // the checksum below the buffer: it sums the file in the buffer's large reads, not the reader's small ones;
        // reading on to the end (below) makes it sum every byte of the file
        try (FSDataInputStream file = fs.open(path);
             InputStream in = new BufferedInputStream(new CheckedInputStream(file, crc), 1 << 20)) {
            try {
                reader.read(in);
            } catch (Exception e) {
                throw new CorruptSnapshotException("its data file " + path + " does not read: " + e, e);
            }
            if (in.read() >= 0) {
                throw new CorruptSnapshotException("its data file " + path + " holds bytes after its last page");
            }
        }
        if (crc.getValue() != manifest.dataCrc32c()) {
            throw new CorruptSnapshotException("its data file " + path + " has the CRC-32C " + crc.getValue()
                    + ", the manifest says " + manifest.dataCrc32c());
        }
    }

    /**
     * Keeps the newest {@link #KEEP} complete snapshots (published, readable manifests) and deletes every other
     * snapshot file of a lower sequence number than the newest of them; returns the names deleted. A file that does
     * not delete is logged and left for the next time.
     */
    public List<String> cleanUp() throws IOException {
        final List<Published> published = published();
        final Set<String> kept = new HashSet<>();
        long newestKept = -1;
        int keptSnapshots = 0;
        for (Published p : published) { // newest first
            if (p.manifest() == null || keptSnapshots == KEEP) {
                continue;
            }
            kept.add(p.fileName());
            kept.add(p.manifest().dataFile());
            newestKept = Math.max(newestKept, p.sequence());
            keptSnapshots++;
        }
        final List<String> manifests = new ArrayList<>();
        final List<String> others = new ArrayList<>();
        for (FileStatus status : list()) {
            final String name = status.getPath().getName();
            final Matcher m = NAME.matcher(name);
            if (!m.matches() || kept.contains(name) || Long.parseLong(m.group(1)) >= newestKept) {
                continue;
            }
            (m.group(3).equals(MANIFEST) ? manifests : others).add(name);
        }
        // manifests first: a snapshot stops counting before its data goes
        final List<String> deleted = new ArrayList<>();
        for (List<String> names : List.of(manifests, others)) {
            for (String name : names) {
                try {
                    fs.delete(new Path(directory, name), false);
                    deleted.add(name);
                } catch (IOException e) {
                    LOG.warn("FliX snapshot directory {}: could not delete the old snapshot file {}", directory, name,
                            e);
                }
            }
        }
        return deleted;
    }

    /** The names of the files here; none where the directory does not exist yet. */
    public List<String> fileNames() throws IOException {
        final List<String> names = new ArrayList<>();
        for (FileStatus status : list()) {
            names.add(status.getPath().getName());
        }
        names.sort(null);
        return names;
    }

    private List<FileStatus> list() throws IOException {
        final FileStatus[] statuses;
        try {
            if (!fs.exists(directory)) {
                return List.of();
            }
            statuses = fs.listStatus(directory);
        } catch (FileNotFoundException e) {
            return List.of();
        }
        return statuses == null ? List.of() : List.of(statuses);
    }

    private byte[] readAll(Path path) throws IOException {
        try (FSDataInputStream in = fs.open(path)) {
            return in.readAllBytes();
        }
    }

    /** Counts and checksums the bytes written through it; buffers them, since checksums like large writes. */
    private static final class CheckedCountingStream extends FilterOutputStream {
        private final CRC32C crc;
        long count;

        CheckedCountingStream(OutputStream out, CRC32C crc) {
            super(new BufferedOutputStream(out, 1 << 20));
            this.crc = crc;
        }

        @Override
        public void write(int b) throws IOException {
            out.write(b);
            crc.update(b);
            count++;
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            crc.update(b, off, len);
            count += len;
        }
    }
}
