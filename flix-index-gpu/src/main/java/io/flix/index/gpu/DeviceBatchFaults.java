package io.flix.index.gpu;

import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;

import io.flix.index.BatchArgs;
import jcuda.Pointer;

/**
 * Large batches are checked on the device (reserved values, broken sort promises); where that finds a fault,
 * BatchArgs words it from a host copy of the batch (a rare path), so both GPU indexes report exactly what the CPU
 * backend reports.
 */
final class DeviceBatchFaults {

    private DeviceBatchFaults() {
    }

    /** Throws BatchArgs' IllegalArgumentException for the fault the device found in keys (and values, or null). */
    static void report(DeviceBuffer keys, DeviceBuffer values, int n, boolean keysSorted) {
        final long[] hostKeys = new long[n];
        cuMemcpyDtoH(Pointer.to(hostKeys), keys.pointer(), n * 8L);
        if (values != null) {
            final long[] hostValues = new long[n];
            cuMemcpyDtoH(Pointer.to(hostValues), values.pointer(), n * 8L);
            BatchArgs.checkPairs(hostKeys, hostValues, n, keysSorted);
        } else {
            BatchArgs.checkKeys(hostKeys, n, keysSorted);
        }
        throw new IllegalStateException("the device found a fault in the batch that the host check did not");
    }
}
