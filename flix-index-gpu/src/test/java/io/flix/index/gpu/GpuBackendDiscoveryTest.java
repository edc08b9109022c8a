package io.flix.index.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import org.junit.jupiter.api.Test;

/** With this module on the class path, flix-index finds the GPU backend (META-INF/services). */
class GpuBackendDiscoveryTest {

    @Test
    void theGpuBackendReportsItsOwnReasonNotAMissingModule() {
        assertEquals(GpuSupport.unavailableReason(), Backend.GPU.unavailableReason());
    }

    @Test
    void autoTakesTheGpuExactlyWhereOneIsUsable() {
        try (FlixIndex index = FlixIndex.open(FlixConfig.builder().backend(Backend.AUTO).threads(1).build())) {
            assertEquals(GpuSupport.isAvailable() ? Backend.GPU : Backend.CPU, index.backend());
            assertEquals(GpuSupport.isAvailable(), index instanceof GpuFlixIndex);
        }
    }

    @Test
    void gpuOpensTheGpuIndexOrFailsWithTheGpuReason() {
        final FlixConfig config = FlixConfig.builder().backend(Backend.GPU).build();
        if (GpuSupport.isAvailable()) {
            try (FlixIndex index = FlixIndex.open(config)) {
                assertEquals(GpuFlixIndex.class, index.getClass());
            }
        } else {
            final IllegalStateException e = assertThrows(IllegalStateException.class, () -> FlixIndex.open(config));
            assertEquals(GpuSupport.unavailableReason(), e.getMessage());
        }
    }
}
