package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java side of the kernel contract agrees with the CUDA side, read from the sources (no GPU needed): a constant
 * or kernel signature changed on one side fails the build here.
 */
class KernelContractTest {

    private final KernelSources sources = new KernelSources("flix-index-gpu");

    @Test
    void everyHeaderConstantEqualsItsJavaConstantAndNoneIsOnOneSideOnly() throws Exception {
        final Map<String, Long> header = sources.headerConstants(sources.cudaFile("kernel_contract.h"));
        assertFalse(header.isEmpty(), "no #define found in kernel_contract.h");
        assertEquals(header, KernelSources.javaConstants(KernelContract.class),
                "kernel_contract.h and KernelContract differ");
    }

    @Test
    void everyFlixKernelHasOneTypedLaunchWithItsParametersInOrder() throws Exception {
        sources.assertLaunchesMatchKernels("flix_kernels.cu", "FlixKernels.java");
    }

    /** From a packed class path (no module directory around, as on a GPU machine): the build's copies serve. */
    @Test
    void theSourcesComeFromTheClassPathWhereNoModuleDirectoryIsAround(@TempDir Path elsewhere) throws Exception {
        final KernelSources packed = new KernelSources("flix-index-gpu", elsewhere);
        assertEquals(sources.headerConstants(sources.cudaFile("kernel_contract.h")),
                packed.headerConstants(packed.cudaFile("kernel_contract.h")));
        assertFalse(packed.headerConstants(packed.cudaFile("kernel_contract.h")).isEmpty());
        packed.assertLaunchesMatchKernels("flix_kernels.cu", "FlixKernels.java");
    }
}
