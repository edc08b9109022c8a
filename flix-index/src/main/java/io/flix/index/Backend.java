package io.flix.index;

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
}
