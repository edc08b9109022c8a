package io.flix.flink.table.snapshot;

import io.flix.flink.dimension.LocalDimension;
import io.flix.flink.table.spec.DimensionSpec;

import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Writes the snapshots of one table dimension ({@link SnapshotSource}) into its {@link SnapshotDirectory}, on a thread
 * of its own:
 * every {@code 'snapshot.interval'} after the bootstrap, and at once after a bootstrap that read the whole topic,
 * each time only where the dimension changed since the snapshot it last wrote or loaded.
 *
 * <h2>Who writes</h2>
 * Every task manager holds the whole table and could write it; one copy per interval is enough. A task manager
 * writes while it runs the first subtask (index 0) of a lookup join on the table ({@link #takeRole}): one per job and
 * join, found without talking to the others, and moving with that subtask after a failover. A lease file would need
 * an atomic create-if-absent, which object stores (S3) do not offer through Flink's file systems. Where two task
 * managers write at once all the same (two joins on the table, two jobs on one path), nothing breaks: each snapshot
 * has files of its own and is complete or absent as a whole (see {@link SnapshotDirectory}); it only costs the work.
 *
 * <h2>What a snapshot holds</h2>
 * The offsets come first: per partition, where the reader had applied the topic up to when the write began. Then the
 * rows, page by page ({@link LocalDimension#writeSnapshotPages}), each page under the dimension's shared lock for as
 * long as it takes to copy it, so the changelog reader and the lookups wait for one page at most, never for the file
 * system. Records applied meanwhile make later pages newer than the offsets; that is safe, because a record of an
 * upsert changelog sets its key to what it says whatever the key held before: a start from the snapshot applies
 * every record from the offsets on, and each key ends as its last record says (or as the snapshot has it, where no
 * record followed the offsets).
 */
public final class SnapshotWriter implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(SnapshotWriter.class);

    /** Keys per page: the most the shared lock is held for at once. */
    static final int PAGE_KEYS = 1 << 16;

    /** What tests change: the thread that writes, and the streams of the files. */
    public record Hooks(ScheduledExecutorService executor, SnapshotDirectory.Streams streams) {
    }

    private final SnapshotSource dimension;
    private final DimensionSpec spec;
    private final SnapshotDirectory directory;
    private final ScheduledExecutorService executor;
    /** Lookup subtasks of index 0 holding the dimension: it writes while there is one. */
    private final AtomicInteger roleHolders = new AtomicInteger();
    /** The offsets of the snapshot written or loaded last: a write with the same ones has nothing new. */
    private Map<Integer, Long> lastOffsets;

    // read by gauges and tests
    private volatile long written;
    private volatile long failures;
    private volatile long lastWriteMillis = -1;
    private volatile long lastPageLockNanos = -1;
    private volatile long lastTotalLockNanos = -1;

    public SnapshotWriter(SnapshotSource dimension, DimensionSpec spec, SnapshotDirectory directory, Hooks hooks) {
        this.dimension = dimension;
        this.spec = spec;
        this.directory = directory;
        if (hooks != null && hooks.executor() != null) {
            this.executor = hooks.executor();
        } else {
            final ScheduledThreadPoolExecutor thread = new ScheduledThreadPoolExecutor(1, r -> {
                final Thread t = new Thread(r, "flix-snapshot-" + spec.topic());
                t.setDaemon(true);
                return t;
            });
            thread.setRemoveOnCancelPolicy(true);
            this.executor = thread;
        }
    }

    public SnapshotDirectory directory() {
        return directory;
    }

    /**
     * A lookup subtask opened on this dimension: where it is the first subtask of its join (index 0), this task
     * manager writes snapshots until it closes; returns whether it took the role (then pair with {@link #dropRole}).
     */
    public boolean takeRole(boolean firstSubtask) {
        if (firstSubtask) {
            roleHolders.incrementAndGet();
        }
        return firstSubtask;
    }

    public void dropRole() {
        roleHolders.decrementAndGet();
    }

    /** The snapshot the dimension started from: a write with its offsets has nothing to add. */
    public synchronized void loaded(SnapshotManifest manifest) {
        lastOffsets = manifest.offsets();
    }

    /**
     * The bootstrap ended: writes from now on every interval, and at once where the bootstrap read the whole topic
     * (no snapshot was loaded), so that the next start need not.
     */
    public void bootstrapped(boolean readWholeTopic) {
        final long interval = spec.snapshots().intervalMillis();
        executor.scheduleWithFixedDelay(this::writeIfDue, readWholeTopic ? 0 : interval, interval,
                TimeUnit.MILLISECONDS);
    }

    private void writeIfDue() {
        try {
            write();
        } catch (Throwable t) {
            if (dimension.isClosing()) {
                return;
            }
            failures++;
            LOG.warn("FliX dimension {}: writing a snapshot to {} failed (lookups go on; the next attempt in {} ms)",
                    dimension.describe(), directory, spec.snapshots().intervalMillis(), t);
        }
    }

    /**
     * Writes a snapshot now, on this thread, where this task manager holds the role and the dimension changed since
     * the last snapshot it wrote or loaded, then deletes old ones; one write at a time.
     *
     * @return the manifest written, or null where there was nothing to write
     * @throws IOException where writing fails (nothing is published)
     * @throws IllegalStateException where the directory's newest snapshot is of another topic (nothing is written:
     *     the directory belongs to another table), or the dimension failed or closed
     */
    public synchronized SnapshotManifest write() throws IOException {
        if (roleHolders.get() <= 0) {
            return null;
        }
        final Map<Integer, Long> offsets = dimension.appliedOffsets(); // before the first page: see the class comment
        final long offsetsAt = System.currentTimeMillis(); // wall clock: compared with another host's at restore
        if (offsets == null || offsets.equals(lastOffsets)) {
            return null;
        }
        final List<SnapshotDirectory.Published> published = directory.published();
        for (SnapshotDirectory.Published p : published) {
            if (p.manifest() != null) {
                if (!p.manifest().topic().equals(spec.topic())) {
                    throw new IllegalStateException(SnapshotRestore.otherTopic(directory, p.manifest(), spec));
                }
                break;
            }
        }
        final long sequence = directory.nextSequence();
        final String topicId = dimension.topicId();
        final long start = System.nanoTime();
        final LocalDimension.PagedSnapshot[] pages = new LocalDimension.PagedSnapshot[1];
        final SnapshotManifest manifest = directory.write(sequence, out -> {
            pages[0] = dimension.writePages(new StopsOnClose(out), PAGE_KEYS);
            return new SnapshotDirectory.Written(pages[0].keys(), pages[0].pages());
        }, (dataFile, bytes, crc, w) -> new SnapshotManifest(SnapshotManifest.FORMAT, sequence, spec.topic(), topicId,
                spec.snapshots().definition(), new TreeMap<>(offsets), w.keys(), w.pages(), dataFile, bytes,
                crc, Instant.now().toString(), HostName.NAME, offsetsAt));
        lastOffsets = offsets;
        final long millis = (System.nanoTime() - start) / 1_000_000;
        lastWriteMillis = millis;
        lastPageLockNanos = pages[0].maxLockNanos();
        lastTotalLockNanos = pages[0].totalLockNanos();
        written++;
        LOG.info("FliX dimension {}: snapshot {} written to {}: {} keys in {} pages, {} bytes, offsets {}, in {} ms "
                        + "(the shared lock held {} ms in all, at most {} ms at once)", dimension.describe(), sequence,
                directory, manifest.keys(), manifest.pages(), manifest.dataBytes(), offsets, millis,
                lastTotalLockNanos / 1_000_000, lastPageLockNanos / 1_000_000);
        try {
            final List<String> deleted = directory.cleanUp();
            if (!deleted.isEmpty()) {
                LOG.info("FliX dimension {}: deleted the older snapshot files {}", dimension.describe(), deleted);
            }
        } catch (IOException e) {
            LOG.warn("FliX dimension {}: could not clean up the snapshot directory {}", dimension.describe(),
                    directory, e);
        }
        return manifest;
    }

    /** Stops writing: a write in progress is interrupted (what it wrote is never published). */
    @Override
    public void close() throws InterruptedException {
        executor.shutdownNow();
        executor.awaitTermination(30, TimeUnit.SECONDS);
    }

    /** The snapshot gauges of a dimension, on a lookup subtask's metric group (-1 or 0 where snapshots are off). */
    public static void registerGauges(MetricGroup group, SnapshotWriter w, Gauge<Long> restoredKeys) {
        group.gauge("flixSnapshotRestoredKeys", restoredKeys);
        group.gauge("flixSnapshotsWritten", () -> w == null ? 0L : w.written);
        group.gauge("flixSnapshotFailures", () -> w == null ? 0L : w.failures);
        group.gauge("flixSnapshotWriteMillis", () -> w == null ? -1L : w.lastWriteMillis);
        group.gauge("flixSnapshotPageLockNanos", () -> w == null ? -1L : w.lastPageLockNanos);
    }

    // ---- for tests and benchmarks ----

    public long written() {
        return written;
    }

    public long failures() {
        return failures;
    }

    public long lastPageLockNanos() {
        return lastPageLockNanos;
    }

    public long lastTotalLockNanos() {
        return lastTotalLockNanos;
    }

    public long lastWriteMillis() {
        return lastWriteMillis;
    }

    /** Ends a write at its next page once the dimension closes (a local file's write ignores interrupts). */
    private final class StopsOnClose extends FilterOutputStream {
        StopsOnClose(OutputStream out) {
            super(out);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (dimension.isClosing() || Thread.currentThread().isInterrupted()) {
                throw new InterruptedIOException("the dimension " + dimension.describe() + " is closing");
            }
            out.write(b, off, len);
        }
    }

    /** The host name, for manifests; looked up once. */
    private static final class HostName {
        static final String NAME = lookUp();

        private static String lookUp() {
            try {
                return InetAddress.getLocalHost().getHostName();
            } catch (IOException | RuntimeException e) {
                return "unknown";
            }
        }
    }
}
