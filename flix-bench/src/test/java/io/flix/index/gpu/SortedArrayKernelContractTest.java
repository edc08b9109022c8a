package io.flix.index.gpu;

import org.junit.jupiter.api.Test;

/** The sorted-array baseline's typed launches agree with its kernels, read from the sources (no GPU needed). */
class SortedArrayKernelContractTest {

    @Test
    void everySortedArrayKernelHasOneTypedLaunchWithItsParametersInOrder() throws Exception {
        new KernelSources("flix-bench").assertLaunchesMatchKernels("sorted_array_kernels.cu", "SortedArrayKernels.java");
    }
}
