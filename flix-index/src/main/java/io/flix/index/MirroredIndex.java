package io.flix.index;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * One index made of several replicas that each hold the whole contents, for example one per GPU of a machine:
 * every update goes to every replica, each lookup to one. Lookups are what a replica multiplies: the replicas answer
 * calls of different threads at the same time (each GPU runs its own calls), while the capacity stays that of one
 * replica.
 *
 * <ul>
 *   <li><b>Updates</b> ({@code build}, {@code upsert}, {@code delete}, {@code restructure}) are checked once, up
 *       front, as the backends check them (same messages), then applied to every replica in parallel, one thread per
 *       replica (the caller's for the first), under the exclusive lock: a lookup sees an update on every replica or
 *       on none. {@code restructure} returns the first replica's count.</li>
 *   <li><b>Lookups</b> ({@code get}, {@code floor}, {@code ceiling}, {@code range}) and the exports are answered by
 *       the calling thread's replica: each thread is given one on its first call, round robin, and keeps it
 *       ({@link #replicaOfCurrentThread()}). So the lookups of several threads spread over the replicas, and the
 *       calls of one thread stay on one (a caller that gathers the calls of many threads per replica, as
 *       {@code LocalDimension} does, reaches them through {@link #replicas()}).</li>
 *   <li>{@code size}, {@code stats} and {@code backend} are the first replica's: the replicas hold the same pairs,
 *       so {@code stats().bytes()} is the memory of one replica (on one device); the mirror holds
 *       {@code replicas().size()} times that. {@link #device()} is -1: each replica reports its own.</li>
 *   <li><b>Divergence.</b> Where an update fails on some replica after the checks (out of device memory, a device
 *       fault), the replicas may no longer hold the same pairs. The mirror then refuses every call but {@code build},
 *       {@code close}, {@code backend} and {@code device} with an {@link IllegalStateException} naming the replicas
 *       and the cause, until a {@code build} succeeds on every replica (which replaces every replica's contents).
 *       This holds where every replica failed too: a backend need not leave a failed update undone.</li>
 *   <li>Concurrency and closing as {@link FlixIndex} says; {@code close} closes every replica.</li>
 * </ul>
 */
public final class MirroredIndex extends AbstractFlixIndex {

    private final List<FlixIndex> replicas;
    /** Applies an update to replicas 1..n-1 while the caller's thread applies it to replica 0; null for one replica. */
    /** Applies updates to the replicas after the first; null with one replica, and once closed. */
    private ExecutorService updaters;
    private final AtomicInteger nextReplica = new AtomicInteger();
    private final ThreadLocal<Integer> replicaOfThread;
    /** Why the replicas may differ, until a build succeeds on all; written under the exclusive lock. */
    private volatile IllegalStateException diverged;

    /**
     * Mirrors the given replicas, which the mirror then owns (closes). They must be open, empty, distinct and of one
     * backend.
     *
     * @throws IllegalArgumentException naming the replica that breaks a rule
     */
    public MirroredIndex(List<? extends FlixIndex> replicas) {
        super(backendOf(replicas), true);
        this.replicas = List.copyOf(replicas);
        final int n = this.replicas.size();
        this.replicaOfThread = ThreadLocal.withInitial(() -> Math.floorMod(nextReplica.getAndIncrement(), n));
        if (n == 1) {
            this.updaters = null;
            return;
        }
        final AtomicInteger threads = new AtomicInteger(1);
        this.updaters = Executors.newFixedThreadPool(n - 1, task -> {
            final Thread t = new Thread(task, "flix-mirror-update-" + threads.getAndIncrement());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Opens one replica per config (say one per device) and mirrors them; where one fails to open, closes those
     * opened and rethrows.
     */
    public static MirroredIndex open(List<FlixConfig> configs) {
        return open(configs, FlixIndex::open);
    }

    /** As {@link #open(List)}, each replica opened by {@code opener}. */
    public static MirroredIndex open(List<FlixConfig> configs, Function<FlixConfig, ? extends FlixIndex> opener) {
        if (configs == null || configs.isEmpty()) {
            throw new IllegalArgumentException("a mirror needs at least one replica config, got " + configs);
        }
        return open(opener.apply(configs.get(0)), configs.subList(1, configs.size()), opener);
    }

    /**
     * Mirrors {@code first}, already open, with one more replica per config of {@code others}, each opened by
     * {@code opener}; where one fails to open (or the mirror refuses them), closes every replica, {@code first}
     * included, and rethrows.
     */
    public static MirroredIndex open(FlixIndex first, List<FlixConfig> others,
                                     Function<FlixConfig, ? extends FlixIndex> opener) {
        final List<FlixIndex> opened = new ArrayList<>();
        opened.add(first);
        try {
            for (FlixConfig config : others) {
                opened.add(opener.apply(config));
            }
            return new MirroredIndex(opened);
        } catch (RuntimeException | Error e) {
            for (FlixIndex index : opened) {
                try {
                    index.close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    private static Backend backendOf(List<? extends FlixIndex> replicas) {
        if (replicas == null || replicas.isEmpty()) {
            throw new IllegalArgumentException("a mirror needs at least one replica, got " + replicas);
        }
        final Map<FlixIndex, Integer> seen = new IdentityHashMap<>();
        Backend backend = null;
        for (int r = 0; r < replicas.size(); r++) {
            final FlixIndex replica = replicas.get(r);
            if (replica == null) {
                throw new IllegalArgumentException("replica " + r + " is null");
            }
            final Integer earlier = seen.put(replica, r);
            if (earlier != null) {
                throw new IllegalArgumentException("replica " + r + " is replica " + earlier + " again: each replica "
                        + "must be an index of its own");
            }
            if (backend == null) {
                backend = replica.backend();
            } else if (replica.backend() != backend) {
                throw new IllegalArgumentException("replica " + r + " is on the " + replica.backend()
                        + " backend, replica 0 on the " + backend + ": a mirror's replicas share one backend");
            }
            final long size = replica.size();
            if (size != 0) {
                throw new IllegalArgumentException("replica " + r + " holds " + size + " keys: a mirror starts from "
                        + "empty replicas, so that they hold the same pairs");
            }
        }
        return backend;
    }

    // ------------------------------------------------------------------------------------------------ the replicas

    /** The replicas, in the order given; replica {@code i} is the one {@link #replicaOfCurrentThread()} names. */
    public List<FlixIndex> replicas() {
        return replicas;
    }

    /**
     * The replica that answers this thread's lookups: given on the thread's first call (or first ask), round robin
     * over the replicas, and kept for the life of the thread.
     */
    public int replicaOfCurrentThread() {
        return replicaOfThread.get();
    }

    /** The devices of the replicas, in replica order ({@link FlixIndex#device()} of each; -1 off the GPU). */
    public List<Integer> devices() {
        final List<Integer> devices = new ArrayList<>(replicas.size());
        for (FlixIndex replica : replicas) {
            devices.add(replica.device());
        }
        return Collections.unmodifiableList(devices);
    }

    // ------------------------------------------------------------------------------------------------ updates

    @Override
    protected void buildLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        BatchArgs.checkPairs(keys, values, n, keysSorted);
        onEveryReplica("build", r -> {
            r.build(keys, values, n, keysSorted);
            return 0L;
        });
        diverged = null;
    }

    @Override
    protected void upsertLocked(long[] keys, long[] values, int n, boolean keysSorted) {
        requireWhole();
        BatchArgs.checkPairs(keys, values, n, keysSorted);
        onEveryReplica("upsert", r -> {
            r.upsert(keys, values, n, keysSorted);
            return 0L;
        });
    }

    @Override
    protected void deleteLocked(long[] keys, int n, boolean keysSorted) {
        requireWhole();
        BatchArgs.checkKeys(keys, n, keysSorted);
        onEveryReplica("delete", r -> {
            r.delete(keys, n, keysSorted);
            return 0L;
        });
    }

    @Override
    protected long restructureLocked() {
        requireWhole();
        return onEveryReplica("restructure", FlixIndex::restructure);
    }

    /**
     * Runs the update on every replica at once and waits for all of them, whatever happens (the lock is held until
     * no replica is still updating). Where any replica failed, marks the mirror diverged and throws.
     *
     * @return what the first replica returned
     */
    private long onEveryReplica(String operation, Function<FlixIndex, Long> update) {
        final int n = replicas.size();
        final List<Future<Long>> others = new ArrayList<>(n - 1);
        for (int r = 1; r < n; r++) {
            final FlixIndex replica = replicas.get(r);
            others.add(updaters.submit(() -> update.apply(replica)));
        }
        final Throwable[] failures = new Throwable[n];
        long first = 0;
        try {
            first = update.apply(replicas.get(0));
        } catch (Throwable t) {
            failures[0] = t;
        }
        boolean interrupted = false;
        for (int r = 1; r < n; r++) {
            while (true) {
                try {
                    others.get(r - 1).get();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true; // the replicas must finish before the lock is let go
                } catch (ExecutionException e) {
                    failures[r] = e.getCause();
                    break;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        final List<Integer> failed = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            if (failures[r] != null) {
                failed.add(r);
            }
        }
        if (failed.isEmpty()) {
            return first;
        }
        final Throwable cause = failures[failed.get(0)];
        if (n == 1 || cause instanceof Error) {
            // one replica cannot differ from another; and an Error (the JVM's memory, say) goes out as it is
            if (n > 1) {
                diverged = divergence(operation, failed, failures);
            }
            if (cause instanceof Error e) {
                throw e;
            }
            throw (RuntimeException) cause;
        }
        final IllegalStateException divergence = divergence(operation, failed, failures);
        diverged = divergence;
        throw divergence;
    }

    private IllegalStateException divergence(String operation, List<Integer> failed, Throwable[] failures) {
        final Throwable cause = failures[failed.get(0)];
        final IllegalStateException divergence = new IllegalStateException("the replicas of the mirrored index may "
                + "differ: " + operation + " failed on replica(s) " + failed + " of " + replicas.size()
                + " (devices " + devices() + ") with " + cause + "; every call but build and close is refused until "
                + "a build succeeds on every replica", cause);
        for (int r : failed.subList(1, failed.size())) {
            divergence.addSuppressed(failures[r]);
        }
        return divergence;
    }

    /** Refuses a call while the replicas may differ, naming why (a new exception, with this call's stack). */
    private void requireWhole() {
        final IllegalStateException why = diverged;
        if (why != null) {
            throw new IllegalStateException(why.getMessage(), why);
        }
    }

    // ------------------------------------------------------------------------------------------------ lookups

    private FlixIndex mine() {
        requireWhole();
        return replicas.get(replicaOfThread.get());
    }

    @Override
    protected void getLocked(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        mine().get(keys, n, valuesOut, keysSorted);
    }

    @Override
    protected void ceilingLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        mine().ceiling(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    protected void floorLocked(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        mine().floor(keys, n, keysOut, valuesOut, keysSorted);
    }

    @Override
    protected RangeResult rangeLocked(long[] lo, long[] hi, int n, int limitPerRange) {
        return mine().range(lo, hi, n, limitPerRange);
    }

    @Override
    protected int exportFromLocked(long fromKey, long[] keysOut, long[] valuesOut) {
        return mine().exportFrom(fromKey, keysOut, valuesOut);
    }

    @Override
    protected long sizeLocked() {
        requireWhole();
        return replicas.get(0).size();
    }

    @Override
    protected IndexStats statsLocked() {
        requireWhole();
        return replicas.get(0).stats();
    }

    // ------------------------------------------------------------------------------------------------ closing

    /** Closes every replica (each even where another fails) and the update threads. */
    @Override
    protected void closeLocked() {
        RuntimeException failure = null;
        for (FlixIndex replica : replicas) {
            try {
                replica.close();
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (updaters != null) {
            // idle: every update waits for all its replicas under the lock that close holds too
            updaters.shutdown();
            // a closed mirror keeps nothing of its threads: the pool's locks may still name one for a moment
            updaters = null;
        }
        if (failure != null) {
            throw failure;
        }
    }

    @Override
    public String toString() {
        return "mirrored index of " + replicas.size() + " " + backend() + " replicas on devices " + devices();
    }
}
