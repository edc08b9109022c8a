package io.flix.index.gpu;

import io.flix.index.FlixIndex;

/**
 * A GPU index that also takes its batches and writes its results in device memory ({@link DeviceLongs}), so that
 * the device work can be timed alone: the host overloads of {@link FlixIndex} are these calls with an upload
 * before and a download after. Each call checks its arguments as the host overload does (plus: arrays on the
 * index's device and at least {@code n} long), may sort the batch in scratch but never modifies it, and returns
 * once the device is done.
 */
public interface DeviceResidentIndex extends FlixIndex {

    /** As {@link #get(long[], int, long[], boolean)}; an unsorted batch is sorted on the device (counted). */
    void get(DeviceLongs keys, int n, DeviceLongs valuesOut, boolean keysSorted);

    /** As {@link #ceiling(long[], int, long[], long[], boolean)}. */
    void ceiling(DeviceLongs keys, int n, DeviceLongs keysOut, DeviceLongs valuesOut, boolean keysSorted);

    /** As {@link #upsert(long[], long[], int, boolean)}. */
    void upsert(DeviceLongs keys, DeviceLongs values, int n, boolean keysSorted);

    /** As {@link #delete(long[], int, boolean)}. */
    void delete(DeviceLongs keys, int n, boolean keysSorted);

    /** The CUDA device ordinal holding the index (where its DeviceLongs must be). */
    int deviceOrdinal();

    /** Device bytes held between calls besides the structure that {@link #stats()} reports (batch scratch). */
    long scratchBytes();
}
