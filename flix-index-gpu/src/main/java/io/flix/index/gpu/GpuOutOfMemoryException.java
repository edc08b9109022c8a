package io.flix.index.gpu;

/** The device ran out of memory; the index that asked is unchanged. */
public final class GpuOutOfMemoryException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    GpuOutOfMemoryException(String message, Throwable cause) {
        super(message, cause);
    }
}
