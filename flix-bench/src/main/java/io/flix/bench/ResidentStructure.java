package io.flix.bench;

import io.flix.index.RangeResult;
import io.flix.index.gpu.DeviceLongs;
import io.flix.index.gpu.DevicePairSort;
import io.flix.index.gpu.DeviceResidentIndex;

import java.util.stream.IntStream;

/**
 * A GPU index timed on the device alone (backend label {@code gpu-resident}): each batch is uploaded before the
 * clock starts and its results downloaded after it stops, so get (sorted and unsorted, the sort of an unsorted
 * batch counted), ceiling, insert and delete time the device work only, as the targets are stated. Build and range
 * have no device-resident call: their times are end to end, as for backend {@code gpu}.
 */
final class ResidentStructure implements OrderedStructure {

    static final String BACKEND = "gpu-resident";

    private final String name;
    private final DeviceResidentIndex index;
    private final boolean hasNodes;
    private final DevicePairSort sort;
    /** Reused device arrays for batches and results, grown on demand. */
    private DeviceLongs first;
    private DeviceLongs second;
    private DeviceLongs third;
    private double deviceMillis = Double.NaN;
    /** The last range result, whose arrays the next range call reuses. */
    private RangeResult lastRange;

    /** {@code timesSort}: whether this structure also times the stand-alone pair sort (one per run is enough). */
    ResidentStructure(String name, DeviceResidentIndex index, boolean hasNodes, boolean timesSort) {
        this.name = name;
        this.index = index;
        this.hasNodes = hasNodes;
        this.sort = timesSort ? DevicePairSort.open(index.deviceOrdinal()) : null;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String backend() {
        return BACKEND;
    }

    @Override
    public double deviceMillis() {
        return deviceMillis;
    }

    boolean timesSort() {
        return sort != null;
    }

    @Override
    public void build(long[] keys, long[] values, int n) {
        deviceMillis = Double.NaN;
        index.build(keys, values, n);
    }

    @Override
    public void get(long[] keys, int n, long[] valuesOut, boolean keysSorted) {
        first = upload(first, keys, n);
        second = room(second, n);
        final long start = System.nanoTime();
        index.get(first, n, second, keysSorted);
        deviceMillis = (System.nanoTime() - start) / 1e6;
        second.download(valuesOut, n);
    }

    @Override
    public void ceiling(long[] keys, int n, long[] keysOut, long[] valuesOut, boolean keysSorted) {
        first = upload(first, keys, n);
        second = room(second, n);
        third = room(third, n);
        final long start = System.nanoTime();
        index.ceiling(first, n, third, second, keysSorted);
        deviceMillis = (System.nanoTime() - start) / 1e6;
        second.download(valuesOut, n);
        third.download(keysOut, n);
    }

    @Override
    public RangeResult range(long[] lo, long[] hi, int n, int limitPerRange) {
        deviceMillis = Double.NaN;
        lastRange = index.range(lo, hi, n, limitPerRange, lastRange);
        return lastRange;
    }

    @Override
    public void upsert(long[] keys, long[] values, int n) {
        first = upload(first, keys, n);
        second = upload(second, values, n);
        final long start = System.nanoTime();
        index.upsert(first, second, n, false);
        deviceMillis = (System.nanoTime() - start) / 1e6;
    }

    @Override
    public void delete(long[] keys, int n) {
        first = upload(first, keys, n);
        final long start = System.nanoTime();
        index.delete(first, n, false);
        deviceMillis = (System.nanoTime() - start) / 1e6;
    }

    /**
     * Times the indexes' sort of an unsorted batch alone (CUB radix sort of key and batch position) on
     * {@code keys[0, n)}; when {@code verify}, checks the order and the positions.
     */
    void sortPairs(long[] keys, int n, boolean verify) {
        first = upload(first, keys, n);
        final long start = System.nanoTime();
        sort.sort(first, n);
        deviceMillis = (System.nanoTime() - start) / 1e6;
        if (verify) {
            final long[] sorted = new long[n];
            final int[] positions = new int[n];
            sort.sortedResult(sorted, positions, n);
            final int bad = IntStream.range(0, n).parallel()
                    .filter(i -> keys[positions[i]] != sorted[i] || (i > 0 && sorted[i - 1] > sorted[i]))
                    .findFirst().orElse(-1);
            if (bad >= 0) {
                throw new IllegalStateException("wrong result from the GPU pair sort at " + bad);
            }
        }
    }

    @Override
    public long restructure() {
        deviceMillis = Double.NaN;
        return hasNodes ? index.restructure() : -1;
    }

    @Override
    public long nodes() {
        return hasNodes ? index.stats().nodes() : -1;
    }

    @Override
    public long size() {
        return index.size();
    }

    @Override
    public long bytes() {
        return index.stats().bytes();
    }

    @Override
    public void close() {
        for (AutoCloseable c : new AutoCloseable[] {first, second, third, sort, index}) {
            if (c != null) {
                try {
                    c.close();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        }
    }

    private DeviceLongs upload(DeviceLongs d, long[] values, int n) {
        final DeviceLongs r = room(d, n);
        r.upload(values, n);
        return r;
    }

    private DeviceLongs room(DeviceLongs d, int n) {
        if (d != null && d.length() >= n) {
            return d;
        }
        if (d != null) {
            d.close();
        }
        return DeviceLongs.allocate(index.deviceOrdinal(), Math.max(1, n));
    }
}
