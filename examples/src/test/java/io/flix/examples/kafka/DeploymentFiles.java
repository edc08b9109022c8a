package io.flix.examples.kafka;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the deployment files (docker-compose.yml, examples/deploy/kubernetes) are checked against: the build's own
 * facts, the one list of Flink's GPU external resource settings they share, and readers for their formats.
 */
final class DeploymentFiles {

    /** The external resource's name: the operators ask {@code RuntimeContext#getExternalResourceInfos("gpu")}. */
    static final String GPU = "gpu";

    /**
     * Flink's GPU external resource as every GPU task manager of the examples configures it, besides the amount and
     * the resource manager's config key. The plugin and its two scripts ship enabled in the distribution's
     * {@code plugins/external-resource-gpu/}; a relative script path is resolved against FLINK_HOME.
     */
    static final Map<String, String> GPU_EXTERNAL_RESOURCE = Map.of(
            "external-resources", GPU,
            "external-resource.gpu.driver-factory.class", "org.apache.flink.externalresource.gpu.GPUDriverFactory",
            "external-resource.gpu.param.discovery-script.path",
            "plugins/external-resource-gpu/nvidia-gpu-discovery.sh");

    static final String GPU_AMOUNT = "external-resource.gpu.amount";
    static final String KUBERNETES_GPU_KEY = "external-resource.gpu.kubernetes.config-key";

    /**
     * The flink image's entrypoint links each jar that ENABLE_BUILT_IN_PLUGINS names from opt/ into plugins/ and
     * exits where opt/ lacks it; the GPU plugin is not in opt/ (it ships in plugins/ already), so naming it there
     * would stop the container.
     */
    static final String GPU_PLUGIN_JAR_PREFIX = "flink-external-resource-gpu";

    private static Properties build;

    private DeploymentFiles() {
    }

    /** flix-build.properties: the jar's name, the Flink and Kafka versions, the repository's root. */
    static synchronized Properties build() {
        if (build == null) {
            final Properties properties = new Properties();
            try (InputStream in = DeploymentFiles.class.getResourceAsStream("/flix-build.properties")) {
                assertNotNull(in, "flix-build.properties is written by the build");
                properties.load(in);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            build = properties;
        }
        return build;
    }

    static Path root() {
        return Path.of(build().getProperty("repository.root"));
    }

    static Map<String, Object> yaml(String relativePath) {
        try (Reader reader = Files.newBufferedReader(root().resolve(relativePath), StandardCharsets.UTF_8)) {
            final Map<String, Object> document = new Yaml(new SafeConstructor(new LoaderOptions())).load(reader);
            assertNotNull(document, relativePath + " is a YAML mapping");
            return document;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * FLINK_PROPERTIES as the flink image's entrypoint reads it: line by line, every blank removed, the key before
     * the first colon. So a value cannot hold a blank, and a comment line would become a key: both fail here.
     */
    static Map<String, String> flinkProperties(String text) {
        final Map<String, String> properties = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            if (line.isBlank()) {
                continue;
            }
            assertFalse(line.strip().startsWith("#"), "FLINK_PROPERTIES takes no comments: " + line);
            final int colon = line.indexOf(':');
            assertTrue(colon > 0, "FLINK_PROPERTIES line without a key: " + line);
            final String key = line.substring(0, colon).strip();
            final String value = line.substring(colon + 1).strip();
            assertFalse(key.matches(".*\\s.*") || value.matches(".*\\s.*"),
                    "the entrypoint deletes blanks inside keys and values: " + line);
            assertTrue(properties.put(key, value) == null, "set once: " + key);
        }
        return properties;
    }

    /** The settings of Flink's external resources among {@code config} ("external-resources" and its keys). */
    static Map<String, String> externalResourceSettings(Map<String, ?> config) {
        final Map<String, String> settings = new TreeMap<>();
        config.forEach((key, value) -> {
            if (key.equals("external-resources") || key.startsWith("external-resource.")) {
                settings.put(key, String.valueOf(value));
            }
        });
        return settings;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Map<String, Object> parent, String key) {
        final Object value = parent.get(key);
        assertTrue(value instanceof Map, key + " is a mapping");
        return (Map<String, Object>) value;
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> maps(Map<String, Object> parent, String key) {
        final Object value = parent.get(key);
        assertTrue(value instanceof List, key + " is a list");
        final List<Map<String, Object>> maps = new ArrayList<>();
        for (Object element : (List<?>) value) {
            assertTrue(element instanceof Map, key + " holds mappings");
            maps.add((Map<String, Object>) element);
        }
        return maps;
    }

    /** The entrypoint and command of a compose service as words (shell scripts split on blanks, continuations joined). */
    static List<String> words(Map<String, Object> service) {
        final List<String> words = new ArrayList<>();
        for (String key : List.of("entrypoint", "command")) {
            final Object value = service.get(key);
            final List<?> parts = value instanceof List<?> l ? l : value == null ? List.of() : List.of(value);
            for (Object part : parts) {
                final String text = String.valueOf(part).replace("\\\n", " ");
                words.addAll(Arrays.stream(text.split("\\s+")).filter(w -> !w.isEmpty()).toList());
            }
        }
        return words;
    }

    /** The arguments after {@code jar} in the job-submission service's {@code flink run}. */
    static List<String> submittedJobArgs(Map<String, Object> submitJob, String jar) {
        final List<String> words = words(submitJob);
        final int at = words.indexOf(jar);
        assertTrue(at >= 0, "flink run names " + jar);
        return List.copyOf(words.subList(at + 1, words.size()));
    }
}
