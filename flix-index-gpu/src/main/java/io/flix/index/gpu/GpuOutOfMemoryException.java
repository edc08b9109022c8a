package io.flix.index.gpu;

/**
 * The device ran out of memory, or the GPU memory budget would have been passed
 * ({@link DeviceMemoryBudgetExceededException}); the index that asked is unchanged.
 */
public sealed class GpuOutOfMemoryException extends IllegalStateException
        permits DeviceMemoryBudgetExceededException {

    private static final long serialVersionUID = 1L;

    GpuOutOfMemoryException(String message, Throwable cause) {
        super(message, cause);
    }
}
