package io.flix.flink.taskmanager;

import org.apache.flink.api.common.externalresource.ExternalResourceDriver;
import org.apache.flink.api.common.externalresource.ExternalResourceDriverFactory;
import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.configuration.Configuration;

import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A stand-in for Flink's GPU driver (flink-external-resource-gpu, not served here), through flink-core's driver
 * interface: it hands out the GPU indexes of its configuration ({@code indexes}: "2,0") as infos carrying the GPU
 * plugin's property, {@code index}, as the plugin's discovery script does with nvidia-smi's numbers.
 */
public final class StandInGpuDriver implements ExternalResourceDriver {

    private final List<String> indexes;

    StandInGpuDriver(List<String> indexes) {
        this.indexes = indexes;
    }

    @Override
    public Set<? extends ExternalResourceInfo> retrieveResourceInfo(long gpuAmount) {
        final Set<ExternalResourceInfo> infos = new LinkedHashSet<>();
        for (int i = 0; i < gpuAmount && i < indexes.size(); i++) {
            infos.add(new Info(indexes.get(i)));
        }
        return infos;
    }

    /** Builds the driver from its configuration's {@code indexes}. */
    public static final class Factory implements ExternalResourceDriverFactory {
        @Override
        public ExternalResourceDriver createExternalResourceDriver(Configuration config) {
            return new StandInGpuDriver(List.of(config.toMap().getOrDefault("indexes", "").split(",")));
        }
    }

    /** One GPU, as the GPU plugin describes it. */
    private record Info(String index) implements ExternalResourceInfo {
        @Override
        public Optional<String> getProperty(String key) {
            return TaskManagerGpus.INDEX_PROPERTY.equals(key) ? Optional.of(index) : Optional.empty();
        }

        @Override
        public Collection<String> getKeys() {
            return Set.of(TaskManagerGpus.INDEX_PROPERTY);
        }
    }
}
