package io.flix.index.gpu;

/**
 * An allocation was refused because it would take the device memory that this process's GPU indexes hold past
 * the budget of the index that asked ({@link io.flix.index.GpuMemoryBudget}); the device was not asked, and the
 * index is unchanged and usable. The message names the budget, the bytes in use and asked for, and what to do.
 */
public final class DeviceMemoryBudgetExceededException extends GpuOutOfMemoryException {

    private static final long serialVersionUID = 1L;

    private final long budgetBytes;
    private final long bytesInUse;
    private final long bytesRequested;

    DeviceMemoryBudgetExceededException(String message, long budgetBytes, long bytesInUse, long bytesRequested) {
        super(message, null);
        this.budgetBytes = budgetBytes;
        this.bytesInUse = bytesInUse;
        this.bytesRequested = bytesRequested;
    }

    /** The budget, in bytes, of the index that asked. */
    public long budgetBytes() {
        return budgetBytes;
    }

    /** The device bytes that the GPU indexes of this process held on the device when the allocation was refused. */
    public long bytesInUse() {
        return bytesInUse;
    }

    /** The bytes the refused allocation asked for. */
    public long bytesRequested() {
        return bytesRequested;
    }
}
