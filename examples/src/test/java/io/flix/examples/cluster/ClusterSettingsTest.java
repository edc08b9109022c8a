package io.flix.examples.cluster;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The cluster ITCases' Flink settings and docker-compose.yml's agree: every compose key reaches the generated
 * config.yaml unchanged or is one of the harness's documented addresses, ports, directories and memory sizes, and
 * the harness adds no key beyond those.
 */
class ClusterSettingsTest {

    @Test
    void everyComposeKeyIsPassedOnOrIsAnAddressPortDirectoryOrMemorySize() throws Exception {
        final Map<String, String> compose = ClusterSettings.composeProperties();
        final Map<String, String> config = ClusterSettings.clusterConfig(compose, 18081, 16123, Path.of("/tmp/c"));
        assertFalse(compose.isEmpty(), "docker-compose.yml has FLINK_PROPERTIES");
        for (Map.Entry<String, String> e : compose.entrySet()) {
            if (!ClusterSettings.HARNESS_KEYS.containsKey(e.getKey())) {
                assertEquals(e.getValue(), config.get(e.getKey()), e.getKey() + " is passed on unchanged");
            }
        }
        final Set<String> added = new HashSet<>(config.keySet());
        added.removeAll(compose.keySet());
        assertTrue(ClusterSettings.HARNESS_KEYS.keySet().containsAll(added), () -> "keys beyond compose's and the "
                + "documented list: " + added);
        for (String why : ClusterSettings.HARNESS_KEYS.values()) {
            assertTrue(Set.of("address", "port", "directory", "memory size", "test timing").contains(why), why);
        }
        // the settings the tests change for timing only, each explicitly and with its value in the config
        ClusterSettings.TEST_TIMING.forEach((k, v) -> {
            assertEquals("test timing", ClusterSettings.HARNESS_KEYS.get(k), k);
            assertEquals(v, config.get(k), k);
        });
        ClusterSettings.HARNESS_KEYS.forEach((k, why) -> assertEquals(why.equals("test timing"),
                ClusterSettings.TEST_TIMING.containsKey(k), () -> k + " is test timing only if TEST_TIMING says so"));
        // what the tests rely on comes from the compose file
        assertEquals(compose.get("taskmanager.numberOfTaskSlots"),
                Integer.toString(FlinkSessionCluster.SLOTS_PER_TASK_MANAGER), "slots per task manager");
        assertTrue(compose.containsKey("restart-strategy.type"), "the restart strategy is the compose file's");
        assertTrue(config.get("execution.checkpointing.dir").contains("/tmp/c/"), "checkpoints in the temp dir");
    }

    @Test
    void theConfigIsFlatYamlThatFlinkReads() throws Exception {
        final Map<String, String> config = ClusterSettings.clusterConfig(ClusterSettings.composeProperties(), 18081,
                16123, Path.of("/tmp/c"));
        final String yaml = ClusterSettings.yaml(config);
        final org.apache.flink.configuration.Configuration read = loaded(yaml);
        config.forEach((k, v) -> assertEquals(v, read.toMap().get(k), k));
    }

    private static org.apache.flink.configuration.Configuration loaded(String yaml) throws Exception {
        final Path dir = java.nio.file.Files.createTempDirectory("flix-config");
        try {
            java.nio.file.Files.writeString(dir.resolve("config.yaml"), yaml);
            return org.apache.flink.configuration.GlobalConfiguration.loadConfiguration(dir.toString());
        } finally {
            java.nio.file.Files.deleteIfExists(dir.resolve("config.yaml"));
            java.nio.file.Files.deleteIfExists(dir);
        }
    }
}
