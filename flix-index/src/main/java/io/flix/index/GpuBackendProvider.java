package io.flix.index;

import java.util.List;

/**
 * The GPU backend as this module finds it: a {@link java.util.ServiceLoader} service that {@code io.flix:flix-index-gpu}
 * provides. Without that jar on the class path {@link Backend#GPU} fails to open with a reason naming it, and
 * {@link Backend#AUTO} takes the CPU; a CPU-only user pulls no CUDA bindings.
 */
public interface GpuBackendProvider {

    /** Why the GPU backend cannot run here (no device, no driver, kernels not built), or {@code null} when it can. */
    String unavailableReason();

    /**
     * The CUDA devices the driver counts in this process (those {@code CUDA_VISIBLE_DEVICES} lets it see); called
     * only where {@link #unavailableReason()} is {@code null}.
     */
    int deviceCount();

    /**
     * The CUDA ordinals of the devices {@link #deviceCount()} counts, in PCI bus order (domain, bus, device): the
     * order in which nvidia-smi, and so Flink's GPU discovery, numbers them. Called only where
     * {@link #unavailableReason()} is {@code null}.
     */
    List<Integer> devicesInPciBusOrder();

    /**
     * Releases what this class loader's GPU backend holds between indexes (threads, pinned memory, kernel modules, its
     * hold on the devices' contexts); only where none of its indexes is open or will be opened again.
     */
    void release();

    /** The node size the GPU index is built for; {@link Backend#AUTO} takes the GPU only for configs of this size. */
    int nodeSize();

    /** Opens a GPU index; throws {@link IllegalStateException} with the reason where no GPU is usable. */
    FlixIndex open(FlixConfig config);
}
