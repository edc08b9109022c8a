package io.flix.examples.cluster;

import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;

/**
 * The Flink settings of the session cluster that the cluster ITCases start, from one place: docker-compose.yml's
 * {@code FLINK_PROPERTIES} (what the demo's job manager and task managers run with). The harness takes every line of
 * it and replaces only the keys of {@link #HARNESS_KEYS}: addresses, ports, directories and memory sizes, which
 * differ between containers and processes on one machine. {@code ClusterSettingsTest} checks that every compose key
 * is passed on unchanged or is one of these, and that the harness adds no other key. The few settings the tests
 * change to learn sooner what they wait for ({@link #TEST_TIMING}) are among them, each with its reason.
 */
final class ClusterSettings {

    /**
     * The keys the harness sets itself, each with why; a compose value of one of these is replaced. Nothing else of
     * the generated config.yaml differs from the compose file.
     */
    static final Map<String, String> HARNESS_KEYS;

    /**
     * Settings only the tests change, each because a test waits for what it governs; none changes what a job does
     * or what is asserted, only how soon the cluster reports it (every wait is a poll with a safety net):
     * <ul>
     *   <li>{@code metrics.fetcher.update-interval} (default 10 s): how old the metrics the REST API serves may be;
     *       the waits for a loaded dimension or a reported backend paid up to 10 s each;</li>
     *   <li>{@code heartbeat.interval} (default 10 s): a killed task manager is noticed when two heartbeat RPCs to it
     *       failed ({@code heartbeat.rpc-failure-threshold}), 15 to 25 s after the {@code kill -9} with the
     *       default, 2 to 3 s with 1 s ({@code heartbeat.timeout}, for a target that answers no more but is not
     *       known dead, stays the default 50 s: a process stalled by a busy machine keeps its registration).</li>
     * </ul>
     */
    static final Map<String, String> TEST_TIMING;

    static {
        final Map<String, String> timing = new LinkedHashMap<>();
        timing.put("metrics.fetcher.update-interval", "1 s");
        timing.put("heartbeat.interval", "1 s");
        TEST_TIMING = Collections.unmodifiableMap(timing);
    }

    static {
        final Map<String, String> keys = new LinkedHashMap<>();
        // addresses: containers reach each other by service name; here everything is on the loopback interface
        keys.put("jobmanager.rpc.address", "address");
        keys.put("jobmanager.bind-host", "address");
        keys.put("rest.address", "address");
        keys.put("rest.bind-address", "address");
        keys.put("taskmanager.host", "address");
        keys.put("taskmanager.bind-host", "address");
        // ports: free ones, several clusters (and other builds) share this machine
        keys.put("rest.port", "port");
        keys.put("jobmanager.rpc.port", "port");
        // directories: in the cluster's temporary directory instead of the compose volume
        keys.put("execution.checkpointing.dir", "directory");
        keys.put("execution.checkpointing.savepoint-dir", "directory");
        keys.put("io.tmp.dirs", "directory");
        keys.put("blob.storage.directory", "directory");
        keys.put("web.tmpdir", "directory");
        // memory sizes: three JVMs beside the build on a 2-core machine
        keys.put("jobmanager.memory.process.size", "memory size");
        keys.put("taskmanager.memory.process.size", "memory size");
        keys.put("taskmanager.memory.managed.size", "memory size");
        // test timing: how soon the cluster reports what the tests wait for (see TEST_TIMING)
        TEST_TIMING.keySet().forEach(k -> keys.put(k, "test timing"));
        HARNESS_KEYS = Collections.unmodifiableMap(keys);
    }

    /** Keys the harness gives each task manager on its command line (dynamic properties), not in config.yaml. */
    static final Map<String, String> PER_TASK_MANAGER_KEYS = Map.of(
            "taskmanager.resource-id", "the name the tests find it by in the REST API",
            "taskmanager.rpc.port", "port");

    static final String JOB_MANAGER_MEMORY = "1g";
    static final String TASK_MANAGER_MEMORY = "1536m";
    /** Nothing of these jobs uses managed memory (heap state); the default fraction would take 40% of the process. */
    static final String TASK_MANAGER_MANAGED_MEMORY = "128m";
    static final String LOOPBACK = "127.0.0.1";

    private ClusterSettings() {
    }

    /** docker-compose.yml's FLINK_PROPERTIES, in their order, as Flink reads them (values as strings). */
    static Map<String, String> composeProperties() throws IOException {
        final Path compose = repositoryRoot().resolve("docker-compose.yml");
        final Map<String, Object> file;
        try (Reader reader = Files.newBufferedReader(compose, StandardCharsets.UTF_8)) {
            file = new Yaml(new SafeConstructor(new LoaderOptions())).load(reader);
        }
        final Object block = walk(file, compose, "x-flink", "environment", "FLINK_PROPERTIES");
        final Map<String, Object> parsed = new Yaml(new SafeConstructor(new LoaderOptions())).load((String) block);
        final Map<String, String> properties = new LinkedHashMap<>();
        parsed.forEach((k, v) -> properties.put(k, String.valueOf(v)));
        return properties;
    }

    /**
     * The config.yaml of a cluster: the compose properties with the harness's addresses, ports, directories, memory
     * sizes and test timing.
     */
    static Map<String, String> clusterConfig(Map<String, String> compose, int restPort, int rpcPort, Path home) {
        final Map<String, String> config = new LinkedHashMap<>(compose);
        final Map<String, String> own = new LinkedHashMap<>();
        own.put("jobmanager.rpc.address", LOOPBACK);
        own.put("jobmanager.bind-host", LOOPBACK);
        own.put("rest.address", LOOPBACK);
        own.put("rest.bind-address", LOOPBACK);
        own.put("taskmanager.host", LOOPBACK);
        own.put("taskmanager.bind-host", LOOPBACK);
        own.put("rest.port", Integer.toString(restPort));
        own.put("jobmanager.rpc.port", Integer.toString(rpcPort));
        own.put("execution.checkpointing.dir", home.resolve("checkpoints").toUri().toString());
        own.put("execution.checkpointing.savepoint-dir", home.resolve("savepoints").toUri().toString());
        own.put("io.tmp.dirs", home.resolve("tmp").toString());
        own.put("blob.storage.directory", home.resolve("blobs").toString());
        own.put("web.tmpdir", home.resolve("web").toString());
        own.put("jobmanager.memory.process.size", JOB_MANAGER_MEMORY);
        own.put("taskmanager.memory.process.size", TASK_MANAGER_MEMORY);
        own.put("taskmanager.memory.managed.size", TASK_MANAGER_MANAGED_MEMORY);
        own.putAll(TEST_TIMING);
        if (!own.keySet().equals(HARNESS_KEYS.keySet())) {
            throw new IllegalStateException("the harness's keys and their documented list differ: " + own.keySet()
                    + " vs " + HARNESS_KEYS.keySet());
        }
        config.putAll(own);
        return config;
    }

    private static final Pattern PLAIN = Pattern.compile("[A-Za-z0-9_./:+-]+( [a-z]+)?");

    /** Flat {@code key: value} lines, as Flink 2's config.yaml takes them; values quoted where YAML needs it. */
    static String yaml(Map<String, String> config) {
        final StringBuilder out = new StringBuilder("# written by the cluster ITCases' harness (ClusterSettings)\n");
        config.forEach((k, v) -> out.append(k).append(": ")
                .append(PLAIN.matcher(v).matches() ? v : "'" + v.replace("'", "''") + "'").append('\n'));
        return out.toString();
    }

    static Path repositoryRoot() throws IOException {
        final Properties build = new Properties();
        try (InputStream in = ClusterSettings.class.getResourceAsStream("/flix-build.properties")) {
            if (in == null) {
                throw new IllegalStateException("flix-build.properties is written by the build (test resources)");
            }
            build.load(in);
        }
        return Path.of(build.getProperty("repository.root")).toAbsolutePath().normalize();
    }

    @SuppressWarnings("unchecked")
    private static Object walk(Map<String, Object> node, Path file, String... path) {
        Object at = node;
        for (String step : path) {
            if (!(at instanceof Map<?, ?> map) || !map.containsKey(step)) {
                throw new IllegalStateException(file + " has no " + String.join(".", path));
            }
            at = ((Map<String, Object>) map).get(step);
        }
        return at;
    }
}
