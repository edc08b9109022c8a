package io.flix.index;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;

/**
 * A CPU-only class path (this module's, as Maven runs its tests): no CUDA bindings, and the GPU backend's absence said
 * plainly. Skipped on a class path that holds flix-index-gpu as well (every module's tests run together).
 */
class BackendDiscoveryTest {

    @BeforeAll
    static void onlyOnTheCpuOnlyClassPath() {
        assumeTrue(BackendDiscoveryTest.class.getResource("/META-INF/services/" + GpuBackendProvider.class.getName())
                == null, "flix-index-gpu is on this class path; these tests are of flix-index's own");
    }

    @Test
    void theCpuOnlyModuleCarriesNoCudaBindings() {
        assertThrows(ClassNotFoundException.class, () -> Class.forName("jcuda.driver.JCudaDriver"));
        assertThrows(ClassNotFoundException.class, () -> Class.forName("io.flix.index.gpu.GpuFlixIndex"));
    }

    @Test
    void gpuIsUnavailableAndTheReasonNamesTheMissingModule() {
        final String reason = Backend.GPU.unavailableReason();
        assertTrue(reason != null && reason.contains("io.flix:flix-index-gpu"), reason);
        assertNull(Backend.CPU.unavailableReason());
        assertNull(Backend.AUTO.unavailableReason(), "AUTO falls back to the CPU, so it is never unavailable");
    }

    @Test
    void openingTheGpuFailsNamingTheMissingModule() {
        final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> FlixIndex.open(FlixConfig.builder().backend(Backend.GPU).build()));
        assertTrue(e.getMessage().contains("io.flix:flix-index-gpu"), e.getMessage());
    }

    @Test
    void autoTakesTheCpu() {
        try (FlixIndex index = FlixIndex.open(FlixConfig.builder().backend(Backend.AUTO).threads(1).build())) {
            assertEquals(Backend.CPU, index.backend());
        }
    }

    @Test
    void autoOnAMachineThatShowsAGpuSaysWhyItTookTheCpu() {
        assertTrue(Backends.autoFallbackReason(true).contains("io.flix:flix-index-gpu"),
                "a GPU shown and the GPU jar missing: AUTO's fall is reported with the cause");
        assertNull(Backends.autoFallbackReason(false), "no GPU shown: nothing fell");
        assertNull(Backend.CPU.fallbackReason());
        assertEquals(List.of(), Backend.AUTO.devicesInPciBusOrder());
        FlixIndex.releaseBackendResources(); // no GPU backend here: nothing to release, no failure
    }
}
