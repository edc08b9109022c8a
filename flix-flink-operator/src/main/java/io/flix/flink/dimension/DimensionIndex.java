package io.flix.flink.dimension;

import io.flix.flink.IndexSettings;
import io.flix.flink.taskmanager.TaskManagerGpus;
import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;
import io.flix.index.MirroredIndex;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * Opens the index of a dimension held once per task manager ({@link LocalDimension}): on the GPU with several devices
 * ({@link IndexSettings#gpusToUse} more than one), one replica of the whole dimension per device, mirrored
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
     * that look up at once (on the CPU each lookup call takes their share of the cores,
     * {@link IndexSettings#configForReaders}), on the task manager's GPUs {@code taskManagerGpus}: the CUDA ordinals
     * Flink assigned to it, or every device it sees ({@link TaskManagerGpus}).
     */
    public static FlixIndex open(IndexSettings settings, int readers, List<Integer> taskManagerGpus) {
        return open(settings, readers, FlixIndex::open, taskManagerGpus);
    }

    /**
     * Opens the dimension's index as {@code settings} say, each index opened by {@code opener}, on the task manager's
     * GPUs {@code taskManagerGpus}: the first on the first of them; where it is on the GPU and the settings use more
     * devices, one more on each of the others, all mirrored.
     */
    public static FlixIndex open(IndexSettings settings, Function<FlixConfig, ? extends FlixIndex> opener,
                                 List<Integer> taskManagerGpus) {
        return open(settings, 1, opener, taskManagerGpus);
    }

    /** As {@link #open(IndexSettings, int, List)}, where the task manager sees {@code visibleDevices} CUDA devices. */
    static FlixIndex open(IndexSettings settings, int readers, Function<FlixConfig, ? extends FlixIndex> opener,
                          int visibleDevices) {
        return open(settings, readers, opener, IntStream.range(0, visibleDevices).boxed().toList());
    }

    static FlixIndex open(IndexSettings settings, int readers, Function<FlixConfig, ? extends FlixIndex> opener,
                          List<Integer> taskManagerGpus) {
        final List<Integer> gpus = settings.gpusToUse(taskManagerGpus); // checked before any index opens
        final FlixIndex first = opener.apply(settings.configForReaders(gpus.get(0), readers));
        if (first.backend() != Backend.GPU || gpus.size() == 1) {
            return first;
        }
        final List<FlixConfig> others = new ArrayList<>(gpus.size() - 1);
        for (int device : gpus.subList(1, gpus.size())) {
            others.add(settings.configForReaders(device, readers));
        }
        return MirroredIndex.open(first, others, opener);
    }
}
