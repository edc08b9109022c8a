package io.flix.flink.dimension;

import io.flix.index.FlixIndex;
import io.flix.index.MirroredIndex;
import io.flix.index.RangeResult;

import java.util.List;

/**
 * Lookups of a {@link MirroredIndex} of GPU replicas (one per device): each calling thread goes to the replica the
 * mirror gives it ({@link MirroredIndex#replicaOfCurrentThread()}: fixed per thread, round robin), and the threads of
 * one replica are gathered into its calls ({@link GatheredLookups}, one per replica). So every device runs its own
 * gathered calls while the others run theirs, and each call stays as large as the threads of one replica make it.
 *
 * <p>The gathered calls go to the replicas directly, past the mirror's lock: the {@link LocalDimension}'s lock keeps
 * them apart from updates (applied to the mirror, so to every replica, under the exclusive lock), and a dimension
 * whose apply failed answers no read.
 */
final class ReplicaLookups implements IndexLookups {

    private final MirroredIndex mirror;
    private final GatheredLookups[] gathered;

    ReplicaLookups(MirroredIndex mirror) {
        this.mirror = mirror;
        final List<FlixIndex> replicas = mirror.replicas();
        this.gathered = new GatheredLookups[replicas.size()];
        for (int r = 0; r < gathered.length; r++) {
            gathered[r] = new GatheredLookups(replicas.get(r));
        }
    }

    /** The gathered lookups of this thread's replica. */
    private GatheredLookups mine() {
        return gathered[mirror.replicaOfCurrentThread()];
    }

    @Override
    public void get(long[] keys, int n, long[] valuesOut) {
        mine().get(keys, n, valuesOut);
    }

    @Override
    public void floor(long[] keys, int n, long[] keysOut, long[] valuesOut) {
        mine().floor(keys, n, keysOut, valuesOut);
    }

    @Override
    public void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut) {
        mine().ceiling(keys, n, keysOut, valuesOut);
    }

    @Override
    public RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        return mine().range(lo, hi, n, limitPerRange);
    }

    @Override
    public int lastGathered() {
        return mine().lastGathered();
    }

    @Override
    public String toString() {
        return "lookups gathered per replica of " + mirror;
    }
}
