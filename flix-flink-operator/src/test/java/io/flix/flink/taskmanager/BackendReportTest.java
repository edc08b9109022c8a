package io.flix.flink.taskmanager;

import io.flix.index.Backend;
import io.flix.index.FlixConfig;
import io.flix.index.FlixIndex;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The backend gauge's text: where AUTO fell to the CPU on a machine that shows a GPU, it says why. */
class BackendReportTest {

    @Test
    void autoOnTheCpuWithAGpuShownSaysWhy() {
        try (FlixIndex cpu = FlixIndex.open(FlixConfig.builder().backend(Backend.CPU).threads(1).build())) {
            assertEquals("cpu (GPU backend unavailable: the CUDA driver could not be loaded (libcuda.so.1))",
                    BackendReport.describe(cpu,
                            "GPU backend unavailable: the CUDA driver could not be loaded (libcuda.so.1)", "test"));
            assertEquals("cpu", BackendReport.describe(cpu, (String) null, "test"), "no GPU shown: nothing to report");
            assertEquals("cpu", BackendReport.describe(cpu, Backend.CPU, "test"), "the CPU asked for");
        }
    }

    @Test
    void onlyAutoReportsAFall() {
        assertNull(Backend.CPU.fallbackReason());
        assertNull(Backend.GPU.fallbackReason(), "GPU fails to open with the cause instead");
    }
}
