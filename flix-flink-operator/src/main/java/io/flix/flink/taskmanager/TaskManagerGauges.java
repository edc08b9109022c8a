package io.flix.flink.taskmanager;

import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.metrics.MetricGroup;

import java.util.Collection;

/**
 * The gauges every FliX operator and SQL lookup function shows about its task manager: the GPUs Flink assigned it
 * ({@code flixAssignedGpus}, {@link TaskManagerGpus#describeAssigned}) and where the index library was loaded from
 * ({@code flixIndexLibrary}, {@link ClassLoaderRelease#indexLibraryHome}).
 */
public final class TaskManagerGauges {

    private TaskManagerGauges() {
    }

    public static void register(MetricGroup group, Collection<? extends ExternalResourceInfo> assignedGpus) {
        final String assigned = TaskManagerGpus.describeAssigned(assignedGpus);
        group.gauge("flixAssignedGpus", () -> assigned);
        group.gauge("flixIndexLibrary", ClassLoaderRelease::indexLibraryHome);
    }
}
