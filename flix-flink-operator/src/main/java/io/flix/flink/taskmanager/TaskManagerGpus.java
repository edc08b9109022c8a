package io.flix.flink.taskmanager;

import io.flix.index.Backend;

import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.functions.FunctionContext;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * The GPUs a task manager's indexes may use, as CUDA ordinals: those Flink assigned to it through its GPU external
 * resource ({@code external-resources: gpu}, whose driver's infos carry an nvidia-smi {@code index}), else every
 * device its process sees.
 *
 * <p>nvidia-smi numbers a machine's GPUs in PCI bus order; CUDA puts the fastest first unless
 * {@code CUDA_DEVICE_ORDER=PCI_BUS_ID}. So an assigned index is the CUDA device at that place in PCI bus order among
 * those the process sees: right wherever the process sees every GPU of the machine or, in a container, exactly its
 * own (whose nvidia-smi numbers only those). With {@code CUDA_VISIBLE_DEVICES} hiding some of a machine's GPUs from a
 * process outside a container, the two numberings disagree: don't set it where Flink assigns GPUs.
 */
public final class TaskManagerGpus {

    /** The external resource's name in Flink's configuration ({@code external-resources: gpu}). */
    public static final String RESOURCE_NAME = "gpu";
    /** The property of an assigned GPU's info that holds its nvidia-smi index (Flink's GPU driver sets it). */
    public static final String INDEX_PROPERTY = "index";

    private TaskManagerGpus() {
    }

    /** The GPUs Flink assigned to the task manager an operator runs on. */
    public static Set<ExternalResourceInfo> assignedTo(RuntimeContext context) {
        return context.getExternalResourceInfos(RESOURCE_NAME);
    }

    /**
     * The GPUs Flink assigned to the task manager a SQL function runs on; none where it runs outside a task (Flink's
     * {@link FunctionContext} then has no runtime context to ask).
     */
    public static Set<ExternalResourceInfo> assignedTo(FunctionContext context) {
        try {
            return context.getExternalResourceInfos(RESOURCE_NAME);
        } catch (TableException outsideATask) {
            return Set.of();
        }
    }

    /** The task manager's GPUs for a backend, of the GPUs Flink assigned to it ({@code assigned}, may be empty). */
    public static List<Integer> of(Collection<? extends ExternalResourceInfo> assigned, Backend backend) {
        if (assigned.isEmpty()) {
            return IntStream.range(0, backend.devices()).boxed().toList();
        }
        return cudaOrdinals(assigned, backend.devicesInPciBusOrder());
    }

    /**
     * The GPUs Flink assigned, as the {@code flixAssignedGpus} gauges show them: their nvidia-smi indexes ("0,1"), or
     * "none" where the task manager has no GPU resource configured (its indexes then use every device it sees).
     */
    public static String describeAssigned(Collection<? extends ExternalResourceInfo> assigned) {
        if (assigned.isEmpty()) {
            return "none";
        }
        return assigned.stream().map(info -> info.getProperty(INDEX_PROPERTY).orElse("?")).sorted()
                .collect(Collectors.joining(","));
    }

    /**
     * The CUDA ordinals of the GPUs Flink assigned, in the order of their indexes.
     *
     * @param assigned              the infos of the GPUs Flink assigned (each with an {@link #INDEX_PROPERTY})
     * @param devicesInPciBusOrder  the CUDA ordinals this process sees, in PCI bus order; empty where the GPU backend
     *                              cannot run here (the indexes then go to the CPU, or fail to open on the GPU)
     * @throws IllegalStateException where an info has no index, or one the process does not see
     */
    public static List<Integer> cudaOrdinals(Collection<? extends ExternalResourceInfo> assigned,
                                             List<Integer> devicesInPciBusOrder) {
        if (devicesInPciBusOrder.isEmpty()) {
            return List.of();
        }
        final List<Integer> indexes = new ArrayList<>(assigned.size());
        for (ExternalResourceInfo info : assigned) {
            final String value = info.getProperty(INDEX_PROPERTY).orElseThrow(() -> new IllegalStateException(
                    "Flink's external resource '" + RESOURCE_NAME + "' assigned a GPU without an '" + INDEX_PROPERTY
                            + "' property (" + info.getKeys() + "): configure Flink's GPU driver "
                            + "(org.apache.flink.externalresource.gpu.GPUDriverFactory)"));
            final int index;
            try {
                index = Integer.parseInt(value.trim());
            } catch (NumberFormatException e) {
                throw new IllegalStateException("Flink's external resource '" + RESOURCE_NAME
                        + "' assigned GPU index '" + value + "', which is not a number", e);
            }
            if (index < 0 || index >= devicesInPciBusOrder.size()) {
                final String listed = System.getenv("CUDA_VISIBLE_DEVICES");
                throw new IllegalStateException("Flink's external resource '" + RESOURCE_NAME
                        + "' assigned GPU index " + index + " to this task manager, but its process sees "
                        + devicesInPciBusOrder.size() + " CUDA device(s)"
                        + (listed == null ? "" : " (CUDA_VISIBLE_DEVICES=" + listed + ": leave it unset where Flink "
                        + "assigns GPUs)"));
            }
            indexes.add(index);
        }
        return indexes.stream().sorted().distinct().map(devicesInPciBusOrder::get).toList();
    }
}
