package io.flix.flink.taskmanager;

import io.flix.flink.IndexSettings;
import io.flix.index.Backend;

import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.functions.FunctionContext;
import org.junit.jupiter.api.Test;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The GPUs a task manager's indexes use: the nvidia-smi indexes Flink's GPU resource assigned, through a driver of
 * Flink's driver interface, mapped to CUDA ordinals by PCI bus order; a stand-in machine's devices are given, so the
 * test means the same with or without a GPU.
 */
class TaskManagerGpusTest {

    /** A machine of four GPUs whose CUDA order (fastest first) is not its PCI bus order: PCI slot i is CUDA ordinal. */
    private static final List<Integer> PCI_ORDER = List.of(2, 0, 3, 1);

    private static Collection<? extends ExternalResourceInfo> assignedBy(String indexes, int amount) throws Exception {
        final Configuration config = Configuration.fromMap(Map.of("indexes", indexes));
        return new StandInGpuDriver.Factory().createExternalResourceDriver(config).retrieveResourceInfo(amount);
    }

    @Test
    void assignedIndexesAreNvidiaSmiNumbersMappedByPciBusOrder() throws Exception {
        assertEquals(List.of(3, 1), TaskManagerGpus.cudaOrdinals(assignedBy("2,3", 2), PCI_ORDER));
        assertEquals(List.of(2), TaskManagerGpus.cudaOrdinals(assignedBy("0", 1), PCI_ORDER));
        assertEquals(List.of(0, 3), TaskManagerGpus.cudaOrdinals(assignedBy("2,1", 2), PCI_ORDER),
                "in the order of the indexes, whatever the driver's order");
    }

    @Test
    void twoTaskManagersOfOneHostUseDisjointDevices() throws Exception {
        final List<Integer> first = TaskManagerGpus.cudaOrdinals(assignedBy("0,1", 2), PCI_ORDER);
        final List<Integer> second = TaskManagerGpus.cudaOrdinals(assignedBy("2,3", 2), PCI_ORDER);
        assertTrue(first.stream().noneMatch(second::contains), first + " and " + second);
        final IndexSettings everyAssigned = IndexSettings.defaults().withBackend(Backend.GPU);
        assertEquals(first, everyAssigned.gpusToUse(first), "a replica on each assigned GPU, no other");
        assertEquals(List.of(2), everyAssigned.withDevices(1).gpusToUse(first));
        assertEquals(List.of(3, 1), second);
        assertEquals(3, everyAssigned.configFor(0, 1, second).device(), "keyed subtask 0 on the first assigned");
        assertEquals(1, everyAssigned.configFor(1, 1, second).device(), "keyed subtask 1 on the second");
        assertEquals(3, everyAssigned.configFor(2, 1, second).device());
    }

    @Test
    void aSqlFunctionOutsideATaskHasNoGpuAssigned() {
        assertEquals(Set.of(), TaskManagerGpus.assignedTo(new FunctionContext(null)));
        assertEquals("none", TaskManagerGpus.describeAssigned(Set.of()));
    }

    @Test
    void whereTheGpuBackendCannotRunNoDeviceIsUsed() throws Exception {
        assertEquals(List.of(), TaskManagerGpus.cudaOrdinals(assignedBy("1", 1), List.of()));
        assertEquals(List.of(), TaskManagerGpus.of(Set.of(), Backend.CPU));
    }

    @Test
    void anIndexThisProcessDoesNotSeeIsRefusedNamingIt() throws Exception {
        final IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> TaskManagerGpus.cudaOrdinals(assignedBy("4", 1), PCI_ORDER));
        assertTrue(e.getMessage().contains("assigned GPU index 4 to this task manager, but its process sees 4 CUDA"),
                e::getMessage);
        final IllegalStateException notANumber = assertThrows(IllegalStateException.class,
                () -> TaskManagerGpus.cudaOrdinals(assignedBy("GPU-1f2e", 1), PCI_ORDER));
        assertTrue(notANumber.getMessage().contains("'GPU-1f2e', which is not a number"), notANumber::getMessage);
        final ExternalResourceInfo noIndex = new ExternalResourceInfo() {
            @Override
            public Optional<String> getProperty(String key) {
                return Optional.empty();
            }

            @Override
            public Collection<String> getKeys() {
                return Set.of("uuid");
            }
        };
        final IllegalStateException missing = assertThrows(IllegalStateException.class,
                () -> TaskManagerGpus.cudaOrdinals(List.of(noIndex), PCI_ORDER));
        assertTrue(missing.getMessage().contains("without an 'index' property ([uuid])"), missing::getMessage);
    }
}
