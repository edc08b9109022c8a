package io.flix.flink.dimension;

import io.flix.flink.IndexSettings;
import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.MirroredIndex;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Opens the index of a dimension held once per task manager ({@link LocalDimension}): on the GPU with several devices
 * ({@link IndexSettings#deviceCount()} above one), one replica of the whole dimension per device, mirrored
 * ({@link MirroredIndex}); else one index.
 *
 * <p>Why replicas and not the keys split over the devices: lookups are the hot path. A replica answers a lookup
 * thread's every kind of lookup alone (floor, ceiling and range need no merge across devices), the lookups of the
 * threads given one replica gather into calls as large as before, and the devices answer their calls at the same
 * time. The price is on the update side: every update batch is applied on every device (in parallel), and the
 * dimension must fit one device; the keyed mode spreads a larger dimension over devices and task managers.
 */
public final class DimensionIndex {

    private DimensionIndex() {
    }

    /** Devices as the {@code flixDevices} gauges show them: "0,1", or "-1" on the CPU. */
    public static String describe(List<Integer> devices) {
        return devices.stream().map(String::valueOf).collect(Collectors.joining(","));
    }

    /**
     * Opens the dimension's index as {@code settings} say, with {@link FlixIndex#open}, for {@code readers} threads
     * that look up at once: on the CPU each lookup call takes their share of the cores
     * ({@link IndexSettings#configForReaders}).
     */
    public static FlixIndex open(IndexSettings settings, int readers) {
        return open(settings, readers, FlixIndex::open, settings.backend().devices());
    }

    /**
     * Opens the dimension's index as {@code settings} say, each index opened by {@code opener}: the first on device 0;
     * where it is on the GPU and the settings count more devices, one more on each of the others, all mirrored.
     */
    public static FlixIndex open(IndexSettings settings, Function<FlixConfig, ? extends FlixIndex> opener) {
        return open(settings, 1, opener, settings.backend().devices());
    }

    /**
     * As {@link #open(IndexSettings, Function)}, for {@code readers} threads that look up at once, where the task
     * manager sees {@code visibleDevices} CUDA devices.
     */
    static FlixIndex open(IndexSettings settings, int readers, Function<FlixConfig, ? extends FlixIndex> opener,
                          int visibleDevices) {
        final FlixIndex first = opener.apply(settings.configForReaders(0, readers, visibleDevices));
        if (first.backend() != Backend.GPU) {
            return first;
        }
        final int devices;
        try {
            devices = settings.deviceCount(visibleDevices);
        } catch (RuntimeException e) {
            first.close();
            throw e;
        }
        if (devices == 1) {
            return first;
        }
        final List<FlixConfig> others = new ArrayList<>(devices - 1);
        for (int device = 1; device < devices; device++) {
            others.add(settings.configForReaders(device, readers, visibleDevices));
        }
        return MirroredIndex.open(first, others, opener);
    }
}
