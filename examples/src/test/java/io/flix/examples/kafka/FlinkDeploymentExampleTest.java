package io.flix.examples.kafka;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Checks examples/deploy/kubernetes/flink-deployment-gpu.yaml without a Kubernetes cluster: it is a FlinkDeployment
 * of the operator's v1beta1 API for this build's Flink, its job is the Kafka job of this build with arguments the
 * job accepts (those docker-compose.yml submits), its jar is where the example's Dockerfile puts the jar the build
 * writes, its parallelism fits its task manager's slots, its task managers configure Flink's GPU external resource
 * as docker-compose.yml's gpu profile does and ask Kubernetes for as many GPUs as that configuration's amount, and
 * its checkpoints and savepoints go to the volume every pod mounts.
 */
class FlinkDeploymentExampleTest {

    static final String FILE = "examples/deploy/kubernetes/flink-deployment-gpu.yaml";
    private static final String DOCKERFILE = "examples/deploy/kubernetes/Dockerfile";
    /** The operator's name for Flink's container in a pod template. */
    private static final String MAIN_CONTAINER = "flink-main-container";

    private static Map<String, Object> deployment;
    private static Map<String, Object> spec;
    private static Map<String, Object> job;
    private static Map<String, Object> flinkConfiguration;

    @BeforeAll
    static void parse() {
        deployment = DeploymentFiles.yaml(FILE);
        spec = DeploymentFiles.map(deployment, "spec");
        job = DeploymentFiles.map(spec, "job");
        flinkConfiguration = DeploymentFiles.map(spec, "flinkConfiguration");
    }

    @Test
    void isAFlinkDeploymentForTheFlinkOfTheBuild() {
        assertEquals("flink.apache.org/v1beta1", deployment.get("apiVersion"));
        assertEquals("FlinkDeployment", deployment.get("kind"));
        // the operator's FlinkVersion names a release line as v<major>_<minor>
        final String[] flink = DeploymentFiles.build().getProperty("flink.version").split("\\.");
        assertEquals("v" + flink[0] + "_" + flink[1], spec.get("flinkVersion"));
        assertNotNull(DeploymentFiles.map(deployment, "metadata").get("name"));
    }

    @Test
    void theJarIsTheBuildsInTheImageTheDockerfileBuilds() throws IOException {
        final String jarUri = String.valueOf(job.get("jarURI"));
        assertTrue(jarUri.startsWith("local:///opt/flink/usrlib/"), "application mode: the jar is in the image, "
                + "in usrlib/ (loaded by the user-code class loader), was " + jarUri);
        final String jarInImage = jarUri.substring("local://".length());

        final List<String> dockerfile = Files.readAllLines(DeploymentFiles.root().resolve(DOCKERFILE));
        final List<String> instructions = dockerfile.stream().filter(l -> !l.isBlank() && !l.startsWith("#"))
                .toList();
        final String flinkImage = "flink:" + DeploymentFiles.build().getProperty("flink.version") + "-java17";
        assertEquals("FROM " + flinkImage, instructions.get(0), "the Flink the job is built against");
        assertEquals(flinkImage, String.valueOf(DeploymentFiles.yaml("docker-compose.yml").get("x-flink") instanceof
                Map<?, ?> x ? x.get("image") : null), "the image of the compose demo");
        assertEquals(List.of("COPY --chown=flink:flink examples/target/" + DeploymentFiles.build()
                .getProperty("examples.jar") + " " + jarInImage), instructions.subList(1, instructions.size()));
        // the image the deployment runs is the one the Dockerfile's own instructions build
        assertTrue(dockerfile.stream().anyMatch(l -> l.contains("docker build -f " + DOCKERFILE + " -t "
                + spec.get("image") + " .")), "the Dockerfile says how to build " + spec.get("image"));
    }

    @Test
    void theEntryClassIsTheKafkaJobOfTheBuild() throws ReflectiveOperationException {
        final Class<?> entry = Class.forName(String.valueOf(job.get("entryClass")));
        assertEquals(KafkaEnrichmentJob.class, entry);
        final Method main = entry.getMethod("main", String[].class);
        assertTrue(Modifier.isStatic(main.getModifiers()), "a static main");
    }

    @Test
    void theArgumentsAreAcceptedAndAreThoseTheComposeDemoSubmits() {
        final List<String> args = args();
        final KafkaEnrichmentJob.Options options = KafkaEnrichmentJob.Options.parse(args.toArray(String[]::new));

        // the compose demo's submission, but for the brokers' address
        final Map<String, Object> submitJob = DeploymentFiles.map(DeploymentFiles.map(
                DeploymentFiles.yaml("docker-compose.yml"), "services"), "submit-job");
        final List<String> composeArgs = DeploymentFiles.submittedJobArgs(submitJob, "/jobs/flix-examples.jar");
        assertEquals(withoutBootstrapServers(composeArgs), withoutBootstrapServers(args));
        assertFalse(options.bootstrapServers().isBlank());

        // the job sets its parallelism from its arguments: the deployment's must be the same
        assertEquals(options.parallelism(), ((Number) job.get("parallelism")).intValue());
        assertEquals("running", job.get("state"));
    }

    @Test
    void theParallelismFitsTheSlotsOfOneTaskManager() {
        final int slots = Integer.parseInt(String.valueOf(flinkConfiguration.get("taskmanager.numberOfTaskSlots")));
        final int parallelism = ((Number) job.get("parallelism")).intValue();
        assertTrue(parallelism >= 1 && parallelism <= slots, "one task manager, so one GPU: parallelism "
                + parallelism + ", slots " + slots);
        assertFalse(spec.containsKey("mode") && "standalone".equals(spec.get("mode")),
                "native mode: Flink starts the task managers the job needs");
    }

    @Test
    void theTaskManagersConfigureFlinksGpuExternalResourceAsTheComposeGpuProfileDoes() {
        final Map<String, String> settings = DeploymentFiles.externalResourceSettings(flinkConfiguration);
        final Map<String, String> expected = new TreeMap<>(DeploymentFiles.GPU_EXTERNAL_RESOURCE);
        expected.put(DeploymentFiles.GPU_AMOUNT, settings.get(DeploymentFiles.GPU_AMOUNT));
        expected.put(DeploymentFiles.KUBERNETES_GPU_KEY, "nvidia.com/gpu");
        assertEquals(expected, settings);
        assertTrue(Integer.parseInt(settings.get(DeploymentFiles.GPU_AMOUNT)) >= 1, "at least one GPU");

        // the same settings as the compose file's GPU task manager, but for the Kubernetes resource name
        final Map<String, Object> gpuTaskManager = DeploymentFiles.map(DeploymentFiles.map(
                DeploymentFiles.yaml("docker-compose.yml"), "services"), "taskmanager-gpu");
        final Map<String, Object> composeEnv = DeploymentFiles.map(gpuTaskManager, "environment");
        final Map<String, String> compose = DeploymentFiles.externalResourceSettings(
                DeploymentFiles.flinkProperties(String.valueOf(composeEnv.get("FLINK_PROPERTIES"))));
        final Map<String, String> kubernetes = new TreeMap<>(settings);
        kubernetes.remove(DeploymentFiles.KUBERNETES_GPU_KEY);
        assertEquals(compose, kubernetes);

        // and the same driver capabilities for the container: nvidia-smi and the CUDA driver library
        final Map<String, Object> taskManagerContainer = mainContainer(DeploymentFiles.map(
                DeploymentFiles.map(spec, "taskManager"), "podTemplate"));
        assertEquals(String.valueOf(composeEnv.get("NVIDIA_DRIVER_CAPABILITIES")),
                env(taskManagerContainer).get("NVIDIA_DRIVER_CAPABILITIES"));
    }

    @Test
    void theTaskManagerPodAsksForAsManyGpusAsFlinkIsConfiguredWith() {
        final Map<String, Object> container = mainContainer(DeploymentFiles.map(
                DeploymentFiles.map(spec, "taskManager"), "podTemplate"));
        final Map<String, Object> limits = DeploymentFiles.map(DeploymentFiles.map(container, "resources"),
                "limits");
        final String resourceName = String.valueOf(flinkConfiguration.get(DeploymentFiles.KUBERNETES_GPU_KEY));
        assertEquals(String.valueOf(flinkConfiguration.get(DeploymentFiles.GPU_AMOUNT)),
                String.valueOf(limits.get(resourceName)), "the pod template's " + resourceName + " limit");

        // the job manager needs no GPU
        final Object jobManagerTemplate = DeploymentFiles.map(spec, "jobManager").get("podTemplate");
        assertFalse(String.valueOf(jobManagerTemplate).contains(resourceName), "no GPU for the job manager");
        // the plugin ships enabled: naming it in ENABLE_BUILT_IN_PLUGINS would stop the container at start
        for (Map<String, Object> template : podTemplates()) {
            for (Map<String, Object> c : DeploymentFiles.maps(DeploymentFiles.map(template, "spec"),
                    "containers")) {
                assertFalse(String.valueOf(env(c).get("ENABLE_BUILT_IN_PLUGINS"))
                        .contains(DeploymentFiles.GPU_PLUGIN_JAR_PREFIX), "ENABLE_BUILT_IN_PLUGINS");
            }
        }
    }

    @Test
    void checkpointsAndSavepointsGoToTheVolumeEveryPodMounts() {
        final Map<String, Object> template = DeploymentFiles.map(spec, "podTemplate");
        final List<String> mountPaths = new ArrayList<>();
        final Object mounts = mainContainer(template).get("volumeMounts");
        assertTrue(mounts instanceof List<?>, "the main container mounts a volume");
        for (Object mount : (List<?>) mounts) {
            mountPaths.add(String.valueOf(((Map<?, ?>) mount).get("mountPath")));
        }
        // savepoint upgrades need the savepoint directory
        assertEquals("savepoint", job.get("upgradeMode"));
        for (String key : List.of("execution.checkpointing.dir", "execution.checkpointing.savepoint-dir")) {
            final String dir = String.valueOf(flinkConfiguration.get(key));
            assertTrue(dir.startsWith("file:///"), key);
            final String path = dir.substring("file://".length());
            assertTrue(mountPaths.stream().anyMatch(m -> path.startsWith(m + "/")), key + " " + dir
                    + " lies on a volume of every pod " + mountPaths);
        }
    }

    // ---- helpers ----

    private static List<String> args() {
        final Object args = job.get("args");
        assertTrue(args instanceof List<?>, "job.args is a list");
        return ((List<?>) args).stream().map(String::valueOf).toList();
    }

    private static List<String> withoutBootstrapServers(List<String> args) {
        final List<String> rest = new ArrayList<>(args);
        final int at = rest.indexOf("--bootstrap-servers");
        assertTrue(at >= 0 && at + 1 < rest.size(), "names the brokers");
        rest.subList(at, at + 2).clear();
        return rest;
    }

    private static List<Map<String, Object>> podTemplates() {
        final List<Map<String, Object>> templates = new ArrayList<>();
        templates.add(DeploymentFiles.map(spec, "podTemplate"));
        for (String role : List.of("jobManager", "taskManager")) {
            if (DeploymentFiles.map(spec, role).get("podTemplate") != null) {
                templates.add(DeploymentFiles.map(DeploymentFiles.map(spec, role), "podTemplate"));
            }
        }
        return templates;
    }

    private static Map<String, Object> mainContainer(Map<String, Object> podTemplate) {
        final List<Map<String, Object>> containers = DeploymentFiles.maps(DeploymentFiles.map(podTemplate, "spec"),
                "containers");
        return containers.stream().filter(c -> MAIN_CONTAINER.equals(c.get("name"))).findFirst()
                .orElseThrow(() -> new AssertionError("the pod template names " + MAIN_CONTAINER));
    }

    private static Map<String, String> env(Map<String, Object> container) {
        final Map<String, String> env = new TreeMap<>();
        final Object list = container.get("env");
        if (list instanceof List<?> entries) {
            for (Object entry : entries) {
                final Map<?, ?> variable = (Map<?, ?>) entry;
                env.put(String.valueOf(variable.get("name")), String.valueOf(variable.get("value")));
            }
        }
        return env;
    }
}
