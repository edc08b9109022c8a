package io.flix.flink.taskmanager;

import org.apache.flink.api.common.externalresource.ExternalResourceDriver;
import org.apache.flink.api.common.externalresource.ExternalResourceDriverFactory;
import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.configuration.Configuration;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;

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

    /**
     * Writes the driver as a plugin jar (its classes and its service file, self-contained as Flink's plugin loader
     * needs) into {@code directory}, a folder under a task manager's plugins directory ({@code FLINK_PLUGINS_DIR});
     * the task manager then takes it for {@code external-resource.gpu.driver-factory.class}.
     */
    public static Path writePluginJar(Path directory) throws IOException {
        Files.createDirectories(directory);
        final Path jar = directory.resolve("flix-stand-in-gpu-driver.jar");
        try (OutputStream file = Files.newOutputStream(jar); JarOutputStream out = new JarOutputStream(file)) {
            out.putNextEntry(new JarEntry("META-INF/services/" + ExternalResourceDriverFactory.class.getName()));
            out.write((Factory.class.getName() + "\n").getBytes(StandardCharsets.UTF_8));
            out.closeEntry();
            for (Class<?> type : List.of(StandInGpuDriver.class, Factory.class, Info.class)) {
                final String entry = type.getName().replace('.', '/') + ".class";
                try (InputStream in = type.getClassLoader().getResourceAsStream(entry)) {
                    out.putNextEntry(new JarEntry(entry));
                    in.transferTo(out);
                    out.closeEntry();
                }
            }
        }
        return jar;
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
            // the plugin jar holds no other class of the project: the constant is compiled in
            return TaskManagerGpus.INDEX_PROPERTY.equals(key) ? Optional.of(index) : Optional.empty();
        }

        @Override
        public Collection<String> getKeys() {
            return Set.of(TaskManagerGpus.INDEX_PROPERTY);
        }
    }
}
