package io.flix.examples.kafka;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Checks docker-compose.yml without a Docker engine: it parses (anchors and merge keys resolved, as Compose does),
 * its services, images and ports are the intended ones, the images are pinned to the versions this build compiles
 * against, the GPU task manager reserves as many GPUs as it configures Flink's GPU external resource with (the same
 * settings as the Kubernetes example's), and the jar the job-submission and generator services mount is the one the
 * build writes, with arguments the job and the generator accept.
 */
class DockerComposeFileTest {

    private static final String CONTAINER_BOOTSTRAP = "kafka:19092";
    private static final String JAR_IN_CONTAINER = "/jobs/flix-examples.jar";

    private static Properties build;
    private static Path root;
    private static Map<String, Object> services;

    @BeforeAll
    @SuppressWarnings("unchecked")
    static void parse() {
        build = DeploymentFiles.build();
        root = DeploymentFiles.root();
        services = (Map<String, Object>) DeploymentFiles.yaml("docker-compose.yml").get("services");
    }

    @Test
    void servicesAreTheDemosServices() {
        assertEquals(new TreeSet<>(Set.of("kafka", "topics", "jobmanager", "taskmanager", "taskmanager-gpu",
                "submit-job", "generator", "watch-enriched")), new TreeSet<>(services.keySet()));
    }

    @Test
    void imagesArePinnedToTheVersionsOfTheBuild() {
        final String kafkaImage = "apache/kafka:" + build.getProperty("kafka.version");
        final String flinkImage = "flink:" + build.getProperty("flink.version") + "-java17";
        for (String name : List.of("kafka", "topics", "watch-enriched")) {
            assertEquals(kafkaImage, string(service(name), "image"), name);
        }
        for (String name : List.of("jobmanager", "taskmanager", "taskmanager-gpu", "submit-job", "generator")) {
            assertEquals(flinkImage, string(service(name), "image"), name);
        }
        for (String name : services.keySet()) {
            final String image = string(service(name), "image");
            assertTrue(image.matches("[a-z0-9./-]+:\\d+\\.\\d+\\.\\d+[a-z0-9.-]*"), name + ": pinned tag, was " + image);
        }
    }

    @Test
    void onlyKafkaAndTheFlinkUiArePublished() {
        for (String name : services.keySet()) {
            final Object ports = service(name).get("ports");
            switch (name) {
                case "kafka" -> assertEquals(List.of("9092:9092"), ports);
                case "jobmanager" -> assertEquals(List.of("8081:8081"), ports);
                default -> assertNull(ports, name + " publishes no port");
            }
        }
    }

    @Test
    void kafkaIsOneKraftNodeAdvertisingTheAddressTheContainersUse() {
        final Map<String, Object> env = map(service("kafka"), "environment");
        assertEquals("broker,controller", String.valueOf(env.get("KAFKA_PROCESS_ROLES")));
        assertTrue(String.valueOf(env.get("KAFKA_ADVERTISED_LISTENERS")).contains("HOST://localhost:9092"));
        assertTrue(String.valueOf(env.get("KAFKA_ADVERTISED_LISTENERS")).contains("DOCKER://" + CONTAINER_BOOTSTRAP));
        assertEquals("1", String.valueOf(env.get("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR")),
                "transactions need the state log on the one broker");
        for (String name : List.of("topics", "submit-job", "generator", "watch-enriched")) {
            final List<String> words = words(service(name));
            final List<String> servers = valuesOf(words, "--bootstrap-server", "--bootstrap-servers");
            assertFalse(servers.isEmpty(), name + " names the broker");
            servers.forEach(s -> assertEquals(CONTAINER_BOOTSTRAP, s, name));
        }
    }

    @Test
    void theGpuTaskManagerReservesAsManyGpusAsFlinkAssignsAndTheDefaultOneNone() throws IOException {
        final Map<String, Object> gpu = service("taskmanager-gpu");
        final List<?> devices = (List<?>) map(map(map(gpu, "deploy"), "resources"), "reservations").get("devices");
        assertEquals(1, devices.size());
        @SuppressWarnings("unchecked") final Map<String, Object> device = (Map<String, Object>) devices.get(0);
        assertEquals("nvidia", device.get("driver"));
        assertEquals(List.of("gpu"), device.get("capabilities"));
        // the container sees as many GPUs as the discovery script is asked for: no more, or they sit idle
        final Map<String, String> gpuProperties = flinkProperties(gpu);
        assertEquals(gpuProperties.get(DeploymentFiles.GPU_AMOUNT), String.valueOf(device.get("count")),
                "the reservation's count is external-resource.gpu.amount");
        assertEquals(List.of("gpu"), gpu.get("profiles"));
        assertEquals("taskmanager", gpu.get("command"));

        final Map<String, Object> cpu = service("taskmanager");
        assertNull(cpu.get("deploy"), "the CPU task manager reserves nothing");
        assertEquals(List.of("cpu"), cpu.get("profiles"));
        assertEquals("taskmanager", cpu.get("command"));
        // the CPU task manager configures no external resource, and the GPU one the same Flink otherwise
        final Map<String, String> cpuProperties = flinkProperties(cpu);
        assertEquals(Map.of(), DeploymentFiles.externalResourceSettings(cpuProperties));
        final Map<String, String> gpuWithoutExternalResources = new TreeMap<>(gpuProperties);
        gpuWithoutExternalResources.keySet().removeAll(DeploymentFiles.externalResourceSettings(gpuProperties)
                .keySet());
        assertEquals(new TreeMap<>(cpuProperties), gpuWithoutExternalResources);
        assertEquals(cpuProperties, flinkProperties(service("jobmanager")), "one Flink configuration");
        // `docker compose up` takes the CPU profile unless the shell sets COMPOSE_PROFILES
        assertTrue(Files.readAllLines(root.resolve(".env")).contains("COMPOSE_PROFILES=cpu"));
    }

    @Test
    void theGpuTaskManagerConfiguresFlinksGpuExternalResource() {
        final Map<String, Object> gpu = service("taskmanager-gpu");
        final Map<String, String> settings = DeploymentFiles.externalResourceSettings(flinkProperties(gpu));
        final Map<String, String> expected = new TreeMap<>(DeploymentFiles.GPU_EXTERNAL_RESOURCE);
        expected.put(DeploymentFiles.GPU_AMOUNT, settings.get(DeploymentFiles.GPU_AMOUNT));
        assertEquals(expected, settings, "the GPU external resource and nothing else (standalone: no config key)");
        assertTrue(Integer.parseInt(settings.get(DeploymentFiles.GPU_AMOUNT)) >= 1, "at least one GPU");

        final Map<String, Object> env = map(gpu, "environment");
        assertTrue(List.of(String.valueOf(env.get("NVIDIA_DRIVER_CAPABILITIES")).split(",")).containsAll(
                List.of("compute", "utility")), "the CUDA driver library and nvidia-smi (the discovery script)");
        for (String name : services.keySet()) {
            final Object enabled = service(name).get("environment") instanceof Map<?, ?> e
                    ? e.get("ENABLE_BUILT_IN_PLUGINS") : null;
            assertFalse(String.valueOf(enabled).contains(DeploymentFiles.GPU_PLUGIN_JAR_PREFIX),
                    name + ": the GPU plugin ships enabled; the entrypoint would look for it in opt/ and exit");
        }
    }

    @Test
    void theGpuProfileConfiguresTheGpuAsTheKubernetesExampleDoes() {
        final Map<String, String> compose = DeploymentFiles.externalResourceSettings(
                flinkProperties(service("taskmanager-gpu")));
        final Map<String, String> kubernetes = DeploymentFiles.externalResourceSettings(map(
                map(DeploymentFiles.yaml(FlinkDeploymentExampleTest.FILE), "spec"), "flinkConfiguration"));
        kubernetes.remove(DeploymentFiles.KUBERNETES_GPU_KEY);
        assertEquals(kubernetes, compose);
    }

    @Test
    void theMountedJarIsTheOneTheBuildWrites() {
        final String mount = "./examples/target/" + build.getProperty("examples.jar") + ":" + JAR_IN_CONTAINER
                + ":ro";
        for (String name : List.of("submit-job", "generator")) {
            assertEquals(List.of(mount), service(name).get("volumes"), name);
            assertTrue(words(service(name)).stream().anyMatch(w -> w.contains(JAR_IN_CONTAINER)), name
                    + " runs the mounted jar");
        }
    }

    @Test
    void theSubmittedJobAndTheGeneratorAcceptTheirArguments() {
        final List<String> submit = words(service("submit-job"));
        final List<String> jobArgs = submit.subList(submit.indexOf(JAR_IN_CONTAINER) + 1, submit.size());
        assertEquals(KafkaEnrichmentJob.class.getName(), valuesOf(submit, "--class").get(0));
        final KafkaEnrichmentJob.Options job = KafkaEnrichmentJob.Options.parse(jobArgs.toArray(String[]::new));

        final List<String> generatorWords = words(service("generator"));
        assertTrue(generatorWords.contains(OrderGenerator.class.getName()));
        final List<?> generatorArgs = (List<?>) service("generator").get("command");
        final OrderGenerator.Options generator = OrderGenerator.Options.parse(
                generatorArgs.stream().map(String::valueOf).toArray(String[]::new));

        // the generator writes what the job reads, the watcher reads what the job writes, the topics exist
        assertEquals(job.ordersTopic(), generator.ordersTopic());
        assertEquals(job.productsTopic(), generator.productsTopic());
        assertEquals(List.of(job.enrichedTopic()), valuesOf(words(service("watch-enriched")), "--topic"));
        assertTrue(words(service("watch-enriched")).contains("read_committed"), "the watcher sees committed output");
        final String topicsScript = String.join(" ", words(service("topics")));
        for (String topic : List.of(job.ordersTopic(), job.productsTopic(), job.enrichedTopic(),
                job.deadLetterTopic())) {
            assertTrue(Pattern.compile("(^|[\\s\"])" + Pattern.quote(topic) + "([\\s\";]|$)").matcher(topicsScript)
                    .find(), "the topics service creates " + topic);
        }
    }

    // ---- helpers ----

    @SuppressWarnings("unchecked")
    private static Map<String, Object> service(String name) {
        final Map<String, Object> service = (Map<String, Object>) services.get(name);
        assertNotNull(service, "service " + name);
        return service;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Map<String, Object> parent, String key) {
        final Object value = parent.get(key);
        assertTrue(value instanceof Map, key + " is a mapping");
        return (Map<String, Object>) value;
    }

    private static Map<String, String> flinkProperties(Map<String, Object> service) {
        return DeploymentFiles.flinkProperties(String.valueOf(map(service, "environment").get("FLINK_PROPERTIES")));
    }

    private static String string(Map<String, Object> parent, String key) {
        return String.valueOf(parent.get(key));
    }

    private static List<String> words(Map<String, Object> service) {
        return DeploymentFiles.words(service);
    }

    private static List<String> valuesOf(List<String> words, String... options) {
        final List<String> values = new ArrayList<>();
        for (int i = 0; i + 1 < words.size(); i++) {
            for (String option : options) {
                if (words.get(i).equals(option)) {
                    values.add(words.get(i + 1));
                }
            }
        }
        return values;
    }
}
