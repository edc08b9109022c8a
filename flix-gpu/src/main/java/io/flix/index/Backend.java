package io.flix.index;

/** Where the index lives. */
public enum Backend {
    /** The GPU when a CUDA device and the compiled kernels are present, else the CPU. */
    AUTO,
    /** Pure Java, on a ForkJoinPool. */
    CPU,
    /** A CUDA device; opening fails with a reason when none is usable. */
    GPU
}
