package io.flix.index;

import java.util.List;

/** Where the index lives. */
public enum Backend {
    /** The GPU when a CUDA device, the compiled kernels and {@code flix-index-gpu} are present, else the CPU. */
    AUTO,
    /** Pure Java, on a ForkJoinPool. */
    CPU,
    /** A CUDA device ({@code io.flix:flix-index-gpu} on the class path); opening fails with a reason when none is usable. */
    GPU;

    /**
     * Why this backend cannot open here, or {@code null} when it can. Only {@link #GPU} can be unusable
     * ({@link #AUTO} then takes the CPU).
     */
    public String unavailableReason() {
        return this == GPU ? Backends.gpuUnavailableReason() : null;
    }

    /**
     * The CUDA devices this backend can open an index on here: for {@link #GPU} and {@link #AUTO}, the devices the
     * CUDA driver counts in this process ({@code CUDA_VISIBLE_DEVICES} chooses them and CUDA numbers them 0, 1, ...
     * in the order it lists them), 0 where the GPU backend is unusable ({@link #unavailableReason()}); for
     * {@link #CPU}, 0.
     */
    public int devices() {
        return this == CPU ? 0 : Backends.gpuDevices();
    }

    /**
     * The CUDA ordinals of the devices {@link #devices()} counts, in PCI bus order: the order in which nvidia-smi
     * numbers a machine's GPUs, and so Flink's GPU external resource ({@code index}) does. Empty for {@link #CPU} and
     * where the GPU backend is unusable.
     */
    public List<Integer> devicesInPciBusOrder() {
        return this == CPU ? List.of() : Backends.gpuDevicesInPciBusOrder();
    }

    /**
     * For {@link #AUTO}: why it opens indexes on the CPU here although the NVIDIA driver shows this process a GPU
     * (the GPU backend is not on the class path, or cannot open: the cause), else {@code null}. {@code null} for
     * {@link #CPU} and {@link #GPU} (which fails to open with the cause instead).
     */
    public String fallbackReason() {
        return this == AUTO ? Backends.autoFallbackReason() : null;
    }
}
