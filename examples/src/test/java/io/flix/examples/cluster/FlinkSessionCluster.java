package io.flix.examples.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessSpec;
import org.apache.flink.runtime.clusterframework.TaskExecutorProcessUtils;
import org.apache.flink.runtime.jobmanager.JobManagerProcessSpec;
import org.apache.flink.runtime.jobmanager.JobManagerProcessUtils;
import org.apache.flink.runtime.util.config.memory.ProcessMemoryUtils;

import javax.management.JMException;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ClassLoadingMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * A Flink session cluster of separate JVM processes on this machine, as a standalone deployment runs one: a job
 * manager ({@code StandaloneSessionClusterEntrypoint}) and task managers ({@code TaskManagerRunner}), each started
 * with the test JVM's own {@code java} and a class path that stands for a Flink distribution's {@code lib/} (see
 * {@link #flinkLib}), jobs submitted as the examples' shaded jar through Flink's own client ({@code CliFrontend run}
 * in a process of its own), so that the job's classes load in the task managers' child-first user-code class loaders.
 *
 * <p>Its settings are docker-compose.yml's ({@link ClusterSettings}). Every process writes its log and its stdout
 * under {@link #logs()} (in {@code target/}); {@link #close()} stops them all (and a JVM shutdown hook kills what is
 * left should the test JVM end first). The waits here wait for an event, polling, with a generous deadline, and fail
 * saying what was awaited.
 */
public final class FlinkSessionCluster implements AutoCloseable {

    /** Only a safety net: every wait is for an event that must happen. */
    public static final Duration SAFETY_NET = Duration.ofMinutes(3);
    static final int SLOTS_PER_TASK_MANAGER = 2;
    private static final String JOB_MANAGER_MAIN = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint";
    private static final String TASK_MANAGER_MAIN = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner";
    private static final String CLIENT_MAIN = "org.apache.flink.client.cli.CliFrontend";
    /** The module options of a Flink distribution's config.yaml ({@code env.java.opts.all}) for Java 17. */
    private static final List<String> JAVA_OPTS = List.of(
            "--add-exports=java.base/sun.net.util=ALL-UNNAMED",
            "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
            "--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
            "--add-opens=java.base/java.lang=ALL-UNNAMED",
            "--add-opens=java.base/java.net=ALL-UNNAMED",
            "--add-opens=java.base/java.io=ALL-UNNAMED",
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
            "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
            "--add-opens=java.base/java.text=ALL-UNNAMED",
            "--add-opens=java.base/java.time=ALL-UNNAMED",
            "--add-opens=java.base/java.util=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
            "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED");
    /**
     * JVM options of the test processes on a small shared machine (two cores) that change no behaviour Flink or a
     * job shows, only how much CPU the processes spend besides their work: the JDK's class-data sharing (the default,
     * stated), the C1 compiler only where a process is short-lived or does little work itself (the job manager, the
     * client: C2 compiles would compete with the task managers for the two cores) and the serial collector there (one
     * GC thread instead of G1's concurrent ones). The task managers keep the default collector (the leak check of
     * the resubmit test measures their heap after a full GC, as a deployment's would) and the C1 compiler only:
     * the jobs enrich a few thousand records, which C2's compilations cost more than they save.
     */
    private static final List<String> COORDINATOR_JVM_OPTS = List.of("-Xshare:auto", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1");
    private static final List<String> TASK_MANAGER_JVM_OPTS = List.of("-Xshare:auto", "-XX:TieredStopAtLevel=1");
    private static final Pattern JOB_ID = Pattern.compile("JobID ([0-9a-f]{32})");
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Every process started and not yet stopped, for the shutdown hook. */
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    /**
     * The clients' class-data archives, one per class path of lib/ (clusters of the same lib/ share one), in a
     * folder of this test JVM's that its end deletes: an archive stays valid only for the jars it was written from.
     */
    private static volatile Path clientArchives;
    private static final Set<Path> CLIENT_ARCHIVES_WRITING = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Process p : LIVE) {
                p.destroyForcibly();
            }
            if (clientArchives != null) {
                try (Stream<Path> files = Files.list(clientArchives)) {
                    files.forEach(f -> f.toFile().delete());
                } catch (IOException ignored) {
                    // a temporary folder
                }
                clientArchives.toFile().delete();
            }
        }, "flix-cluster-reaper"));
    }

    /**
     * Whether a JVM can write a class-data archive for this class path: it needs the runtime's base archive (a
     * jlink'd runtime has none unless made with {@code -Xshare:dump}) and jars only (a folder with classes on the
     * class path fails the JVM's start).
     */
    static boolean canArchiveClasses(String classPath) {
        if (!Files.isRegularFile(Path.of(System.getProperty("java.home"), "lib", "server", "classes.jsa"))) {
            return false;
        }
        return Arrays.stream(classPath.split(File.pathSeparator)).noneMatch(entry -> Files.isDirectory(Path.of(entry)));
    }

    private static synchronized Path clientArchive(String classPath) throws IOException {
        if (clientArchives == null) {
            clientArchives = Files.createTempDirectory("flix-client-cds");
        }
        return clientArchives.resolve("client-" + Integer.toHexString(classPath.hashCode()) + ".jsa");
    }

    private final Path home;
    private final Path conf;
    private final Path logs;
    private final Path jobJar;
    private final String java;
    private final String libClassPath;
    private final Map<String, String> config;
    private final int restPort;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final List<String> taskManagerJvmParams;
    private final List<String> taskManagerDynamicConfigs;
    private final AtomicInteger taskManagerNumber = new AtomicInteger();
    private final AtomicInteger clientNumber = new AtomicInteger();
    private final Map<String, ClusterProcess> taskManagers = new LinkedHashMap<>();
    private final Map<String, JMXConnector> jmx = new ConcurrentHashMap<>();
    private ClusterProcess jobManager;
    private boolean closed;

    /** A process of the cluster and its files. */
    record ClusterProcess(String name, Process process, Path log, Path out, int jmxPort) {
    }

    /** What a task manager's JVM holds after a full GC. */
    public record JvmFigures(int threads, long heapUsedBytes, long metaspaceUsedBytes, int loadedClasses,
                             long userCodeClassLoaders, List<String> userCodeClassLoaderIds, int kafkaMBeans,
                             Map<String, Integer> threadsByName) {
    }

    private FlinkSessionCluster(Path home, Path logs, Path jobJar, List<Path> moreLib,
                                Map<String, String> moreSettings) throws IOException {
        this.home = home;
        this.conf = Files.createDirectories(home.resolve("conf"));
        this.logs = Files.createDirectories(logs);
        this.jobJar = jobJar;
        this.java = javaExecutable();
        final List<Path> lib = new ArrayList<>(moreLib);
        lib.addAll(flinkLib(jobJar, logs.resolve("lib.txt")));
        this.libClassPath = lib.stream().map(Path::toString).collect(Collectors.joining(File.pathSeparator));
        this.restPort = FreePorts.next();
        this.config = new LinkedHashMap<>(
                ClusterSettings.clusterConfig(ClusterSettings.composeProperties(), restPort, FreePorts.next(), home));
        this.config.putAll(moreSettings);
        Files.writeString(conf.resolve("config.yaml"), ClusterSettings.yaml(config));
        Files.writeString(conf.resolve("log4j.properties"), LOG4J);
        Files.writeString(conf.resolve("log4j-cli.properties"), LOG4J);
        final Configuration flinkConfig = Configuration.fromMap(config);
        final TaskExecutorProcessSpec tm = TaskExecutorProcessUtils.processSpecFromConfig(flinkConfig);
        this.taskManagerJvmParams = words(ProcessMemoryUtils.generateJvmParametersStr(tm));
        this.taskManagerDynamicConfigs = words(TaskExecutorProcessUtils.generateDynamicConfigsStr(tm));
    }

    /**
     * Starts a job manager and {@code taskManagers} task managers and waits until they all have registered.
     *
     * @param logs where the processes' logs go (kept after the run)
     */
    public static FlinkSessionCluster start(Path logs, Path jobJar, int taskManagers) throws Exception {
        return start(logs, jobJar, taskManagers, List.of(), Map.of());
    }

    /**
     * As {@link #start(Path, Path, int)}, with more jars (or class folders) in the cluster's {@code lib/} and more
     * settings in its {@code config.yaml}: the other way of deploying, the index library in {@code lib/}.
     */
    public static FlinkSessionCluster start(Path logs, Path jobJar, int taskManagers, List<Path> moreLib,
                                            Map<String, String> moreSettings) throws Exception {
        if (!Files.isRegularFile(jobJar)) {
            throw new IllegalStateException("no job jar at " + jobJar + ": the cluster ITCases run after `package` "
                    + "(mvn verify), which writes it");
        }
        final long start = System.nanoTime();
        final FlinkSessionCluster cluster = new FlinkSessionCluster(Files.createTempDirectory("flix-cluster"), logs,
                jobJar, moreLib, moreSettings);
        try {
            cluster.startJobManager();
            for (int i = 0; i < taskManagers; i++) {
                cluster.startTaskManager();
            }
            cluster.awaitTaskManagers(taskManagers);
        } catch (Throwable t) {
            cluster.printLogTails(System.err);
            cluster.close();
            throw t;
        }
        System.out.printf("FlinkSessionCluster: job manager and %d task managers up in %.1f s (REST port %d, "
                + "logs in %s)%n", taskManagers, (System.nanoTime() - start) / 1e9, cluster.restPort, logs);
        return cluster;
    }

    // ---- processes ----

    private void startJobManager() throws IOException {
        final JobManagerProcessSpec spec = JobManagerProcessUtils.processSpecFromConfig(Configuration.fromMap(config));
        final List<String> command = new ArrayList<>();
        command.add(java);
        command.addAll(JAVA_OPTS);
        command.addAll(words(JobManagerProcessUtils.generateJvmParametersStr(spec, Configuration.fromMap(config))));
        command.addAll(COORDINATOR_JVM_OPTS);
        command.addAll(logOptions("jobmanager", "log4j.properties"));
        command.addAll(List.of("-classpath", libClassPath, JOB_MANAGER_MAIN, "--configDir", conf.toString()));
        command.addAll(words(JobManagerProcessUtils.generateDynamicConfigsStr(spec)));
        jobManager = launch("jobmanager", command, -1);
        await(() -> {
            checkAlive(jobManager);
            return tryGet("/overview") != null;
        }, "the job manager's REST API answers on port " + restPort);
    }

    /** Starts one more task manager; returns its resource id (tm-1, tm-2, ...), as the REST API names it. */
    public synchronized String startTaskManager() throws IOException {
        return startTaskManager(Map.of(), Map.of());
    }

    /**
     * As {@link #startTaskManager()}, with settings of this task manager's own on its command line ({@code -D}, as
     * a deployment gives each task manager its own, e.g. its GPU external resource) and environment variables
     * ({@code FLINK_PLUGINS_DIR}, ...).
     */
    public synchronized String startTaskManager(Map<String, String> settings, Map<String, String> environment)
            throws IOException {
        final String id = "tm-" + taskManagerNumber.incrementAndGet();
        final int jmxPort = FreePorts.next();
        final List<String> command = new ArrayList<>();
        command.add(java);
        command.addAll(JAVA_OPTS);
        command.addAll(taskManagerJvmParams);
        command.addAll(TASK_MANAGER_JVM_OPTS);
        command.addAll(logOptions(id, "log4j.properties"));
        // the leak checks read threads and heap over JMX, and force a GC through it; that GC clears soft references
        // (which a JVM otherwise keeps for a second per free MiB of heap since their last use): what soft caches
        // hold for a while is no leak
        command.add("-XX:SoftRefLRUPolicyMSPerMB=0");
        command.addAll(List.of("-Dcom.sun.management.jmxremote.port=" + jmxPort,
                "-Dcom.sun.management.jmxremote.rmi.port=" + jmxPort,
                "-Dcom.sun.management.jmxremote.host=" + ClusterSettings.LOOPBACK,
                "-Djava.rmi.server.hostname=" + ClusterSettings.LOOPBACK,
                "-Dcom.sun.management.jmxremote.authenticate=false",
                "-Dcom.sun.management.jmxremote.ssl=false"));
        command.addAll(List.of("-classpath", libClassPath, TASK_MANAGER_MAIN, "--configDir", conf.toString()));
        command.addAll(taskManagerDynamicConfigs);
        command.addAll(List.of("-D", "taskmanager.resource-id=" + id,
                "-D", "taskmanager.rpc.port=" + FreePorts.next()));
        settings.forEach((key, value) -> command.addAll(List.of("-D", key + "=" + value)));
        taskManagers.put(id, launch(id, command, jmxPort, environment));
        return id;
    }

    /** {@code kill -9} of a task manager: no shutdown of any kind; returns once the process is gone. */
    public synchronized void killTaskManager(String id) throws InterruptedException {
        final ClusterProcess tm = taskManagers.remove(id);
        if (tm == null) {
            throw new IllegalArgumentException("no task manager " + id + " (have " + taskManagers.keySet() + ")");
        }
        closeJmx(id);
        tm.process().destroyForcibly();
        if (!tm.process().waitFor(SAFETY_NET.toSeconds(), TimeUnit.SECONDS)) {
            throw new AssertionError("task manager " + id + " did not die on SIGKILL");
        }
        LIVE.remove(tm.process());
    }

    public synchronized List<String> taskManagerIds() {
        return List.copyOf(taskManagers.keySet());
    }

    private ClusterProcess launch(String name, List<String> command, int jmxPort) throws IOException {
        return launch(name, command, jmxPort, Map.of());
    }

    private ClusterProcess launch(String name, List<String> command, int jmxPort, Map<String, String> environment)
            throws IOException {
        final Path log = logs.resolve(name + ".log");
        final Path out = logs.resolve(name + ".out");
        final ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(out.toFile());
        builder.environment().put("FLINK_CONF_DIR", conf.toString());
        builder.environment().putAll(environment);
        final Process process = builder.start();
        LIVE.add(process);
        Files.writeString(logs.resolve(name + ".command"), String.join(" ", command) + "\n");
        return new ClusterProcess(name, process, log, out, jmxPort);
    }

    private List<String> logOptions(String name, String log4jFile) {
        return List.of("-Dlog.file=" + logs.resolve(name + ".log"),
                "-Dlog4j.configurationFile=" + conf.resolve(log4jFile).toUri());
    }

    private void checkAlive(ClusterProcess p) {
        if (!p.process().isAlive()) {
            throw new AssertionError(p.name() + " exited with " + p.process().exitValue() + "; its output:\n"
                    + tail(p.out(), 40) + "\nits log:\n" + tail(p.log(), 40));
        }
    }

    // ---- jobs ----

    /**
     * Submits the job jar's {@code mainClass} with {@code args} through Flink's client library from this JVM
     * ({@link ProgramSubmission}); returns the job id. {@code savepoint} (or null) is the savepoint to start from.
     * The task managers load the job's classes in a new user-code class loader, as for {@link #submitWithFlinkRun}.
     */
    public String submit(String mainClass, List<String> args, String savepoint) throws Exception {
        return ProgramSubmission.submit(conf, ClusterSettings.LOOPBACK, restPort, jobJar, mainClass, args, savepoint);
    }

    /**
     * Submits the job jar's {@code mainClass} with {@code args} through Flink's command line client ({@code flink
     * run --detached}, a process of its own, as the compose file's {@code submit-job} does); returns the job id.
     * {@code savepoint} (or null) is the savepoint to start from ({@code -s}).
     */
    public String submitWithFlinkRun(String mainClass, List<String> args, String savepoint) throws Exception {
        final String name = "client-" + clientNumber.incrementAndGet();
        final List<String> command = new ArrayList<>();
        command.add(java);
        command.addAll(JAVA_OPTS);
        // a short-lived JVM: the C1 compiler only starts it sooner (COORDINATOR_JVM_OPTS)
        command.add("-Xmx768m");
        command.addAll(COORDINATOR_JVM_OPTS);
        // class-data sharing of the client's classes from lib/: the first submission writes the archive as its JVM
        // exits, the next ones map it instead of loading and verifying those classes again (an unusable archive is
        // passed over: -Xshare:auto)
        if (canArchiveClasses(libClassPath)) {
            final Path archive = clientArchive(libClassPath);
            if (Files.exists(archive)) {
                command.add("-XX:SharedArchiveFile=" + archive);
            } else if (CLIENT_ARCHIVES_WRITING.add(archive)) {
                command.add("-XX:ArchiveClassesAtExit=" + archive);
            }
        }
        command.addAll(logOptions(name, "log4j-cli.properties"));
        command.addAll(List.of("-classpath", libClassPath, CLIENT_MAIN, "run", "-m",
                ClusterSettings.LOOPBACK + ":" + restPort, "--detached"));
        if (savepoint != null) {
            command.addAll(List.of("-s", savepoint));
        }
        command.addAll(List.of("-c", mainClass, jobJar.toString()));
        command.addAll(args);
        final ClusterProcess client = launch(name, command, -1);
        try {
            if (!client.process().waitFor(SAFETY_NET.toSeconds(), TimeUnit.SECONDS)) {
                throw new AssertionError("flink run of " + mainClass + " did not end within " + SAFETY_NET + ":\n"
                        + tail(client.out(), 40));
            }
        } finally {
            client.process().destroyForcibly();
            LIVE.remove(client.process());
        }
        final String output = Files.readString(client.out());
        final Matcher id = JOB_ID.matcher(output);
        if (client.process().exitValue() != 0 || !id.find()) {
            throw new AssertionError("flink run of " + mainClass + " " + args + " failed (exit "
                    + client.process().exitValue() + "):\n" + tail(client.out(), 60) + "\nclient log:\n"
                    + tail(client.log(), 60));
        }
        return id.group(1);
    }

    public String jobState(String jobId) {
        return get("/jobs/" + jobId).path("state").asText();
    }

    /** Waits until the job is in {@code state}; fails at once where it reached another terminal state. */
    public void awaitJobState(String jobId, String state) {
        await(() -> {
            final String now = jobState(jobId);
            if (!now.equals(state) && Set.of("FAILED", "CANCELED", "FINISHED").contains(now)) {
                throw new AssertionError("job " + jobId + " is " + now + ", not " + state + "; exceptions: "
                        + exceptions(jobId));
            }
            return now.equals(state);
        }, "job " + jobId + " is " + state);
    }

    /** Waits until the job runs and every subtask of it does. */
    public void awaitRunning(String jobId) {
        await(() -> {
            final JsonNode job = get("/jobs/" + jobId);
            final String state = job.path("state").asText();
            if (Set.of("FAILED", "CANCELED", "FINISHED").contains(state)) {
                throw new AssertionError("job " + jobId + " is " + state + "; exceptions: " + exceptions(jobId));
            }
            if (!state.equals("RUNNING")) {
                return false;
            }
            for (JsonNode v : job.path("vertices")) {
                if (v.path("tasks").path("RUNNING").asInt() != v.path("parallelism").asInt()) {
                    return false;
                }
            }
            return true;
        }, "every subtask of job " + jobId + " runs");
    }

    /** Stops the job with a savepoint (no drain); returns the savepoint's path once the job is FINISHED. */
    public String stopWithSavepoint(String jobId) {
        final String savepoints = config.get("execution.checkpointing.savepoint-dir");
        final JsonNode trigger = send("POST", "/jobs/" + jobId + "/stop",
                "{\"drain\":false,\"targetDirectory\":\"" + savepoints + "\"}");
        final String request = trigger.path("request-id").asText();
        final JsonNode[] done = new JsonNode[1];
        await(() -> {
            final JsonNode status = get("/jobs/" + jobId + "/savepoints/" + request);
            if (status.path("status").path("id").asText().equals("COMPLETED")) {
                done[0] = status.path("operation");
                return true;
            }
            return false;
        }, "the stop-with-savepoint of job " + jobId + " completes");
        if (done[0].has("failure-cause")) {
            throw new AssertionError("stop-with-savepoint of " + jobId + " failed: " + done[0].path("failure-cause"));
        }
        awaitJobState(jobId, "FINISHED");
        return done[0].path("location").asText();
    }

    /** Cancels the job and waits until it is CANCELED. */
    public void cancel(String jobId) {
        send("PATCH", "/jobs/" + jobId + "?mode=cancel", null);
        awaitJobState(jobId, "CANCELED");
    }

    /** Cancels every job that is not in a terminal state (a test's cleanup). */
    public void cancelAll() {
        for (JsonNode job : get("/jobs").path("jobs")) {
            final String status = job.path("status").asText();
            if (!Set.of("FAILED", "CANCELED", "FINISHED").contains(status)) {
                cancel(job.path("id").asText());
            }
        }
    }

    /** Waits until {@code count} task managers are registered and every slot of theirs is free. */
    public void awaitTaskManagers(int count) {
        await(() -> {
            checkAlive(jobManager);
            final JsonNode overview = get("/overview");
            return overview.path("taskmanagers").asInt() == count
                    && overview.path("slots-total").asInt() == count * SLOTS_PER_TASK_MANAGER
                    && overview.path("slots-available").asInt() == count * SLOTS_PER_TASK_MANAGER;
        }, count + " task managers registered, all " + count * SLOTS_PER_TASK_MANAGER + " slots free");
    }

    /** The exceptions the job manager recorded for the job (root causes, newest first), as text. */
    public String exceptions(String jobId) {
        final JsonNode history = tryGet("/jobs/" + jobId + "/exceptions");
        if (history == null) {
            return "(none available)";
        }
        final List<String> lines = new ArrayList<>();
        for (JsonNode e : history.path("exceptionHistory").path("entries")) {
            final String trace = e.path("stacktrace").asText();
            lines.add(e.path("exceptionName").asText() + " on " + e.path("taskManagerId").asText("?") + " ("
                    + e.path("taskName").asText("") + "): " + trace.lines().limit(3).collect(Collectors.joining(" | ")));
        }
        return lines.isEmpty() ? "(none)" : String.join("\n", lines);
    }

    /** Number of root exceptions (failures) the job manager recorded for the job. */
    public int failureCount(String jobId) {
        return get("/jobs/" + jobId + "/exceptions").path("exceptionHistory").path("entries").size();
    }

    /** Each subtask's task manager, per vertex name: vertex name -> (subtask -> resource id). */
    public Map<String, Map<Integer, String>> placement(String jobId) {
        final Map<String, Map<Integer, String>> placement = new TreeMap<>();
        for (JsonNode v : get("/jobs/" + jobId).path("vertices")) {
            final Map<Integer, String> subtasks = new TreeMap<>();
            for (JsonNode s : get("/jobs/" + jobId + "/vertices/" + v.path("id").asText()).path("subtasks")) {
                subtasks.put(s.path("subtask").asInt(), s.path("taskmanager-id").asText());
            }
            placement.put(v.path("name").asText(), subtasks);
        }
        return placement;
    }

    /**
     * One metric of an operator, per subtask: the operators whose name, with every character but letters and digits
     * read as '_', contains {@code operator} likewise read. The REST API serves metrics it fetched at most
     * {@code metrics.fetcher.update-interval} (10 s) ago.
     */
    public Map<Integer, String> operatorMetric(String jobId, String operator, String metric) {
        final String wanted = normalized(operator);
        final Map<Integer, String> values = new TreeMap<>();
        for (JsonNode v : get("/jobs/" + jobId).path("vertices")) {
            values.putAll(subtaskMetric(jobId, v, metric,
                    name -> normalized(name).contains(wanted)));
        }
        return values;
    }

    /**
     * One metric of every vertex whose name contains {@code vertex}, per subtask: vertex name -> (subtask -> value).
     * Unlike {@link #operatorMetric}, vertices whose subtasks share numbers stay apart.
     */
    public Map<String, Map<Integer, String>> vertexMetric(String jobId, String vertex, String metric) {
        final Map<String, Map<Integer, String>> values = new TreeMap<>();
        for (JsonNode v : get("/jobs/" + jobId).path("vertices")) {
            if (v.path("name").asText().contains(vertex)) {
                values.put(v.path("name").asText(), subtaskMetric(jobId, v, metric, name -> true));
            }
        }
        return values;
    }

    /** A vertex's metric {@code <subtask>.<operator>.<metric>} of the operators {@code operatorName} accepts. */
    private Map<Integer, String> subtaskMetric(String jobId, JsonNode v, String metric,
                                               java.util.function.Predicate<String> operatorName) {
        final String vertex = "/jobs/" + jobId + "/vertices/" + v.path("id").asText() + "/metrics";
        final List<String> ids = new ArrayList<>();
        for (JsonNode m : get(vertex)) {
            final String id = m.path("id").asText();
            final int dot = id.indexOf('.');
            if (dot > 0 && id.endsWith("." + metric) && id.substring(0, dot).chars().allMatch(Character::isDigit)
                    && operatorName.test(id.substring(dot + 1, id.length() - metric.length() - 1))) {
                ids.add(id);
            }
        }
        final Map<Integer, String> values = new TreeMap<>();
        if (!ids.isEmpty()) {
            for (JsonNode m : get(vertex + "?get=" + String.join(",", ids))) {
                final String id = m.path("id").asText();
                values.put(Integer.parseInt(id.substring(0, id.indexOf('.'))), m.path("value").asText());
            }
        }
        return values;
    }

    private static String normalized(String name) {
        return name.replaceAll("[^A-Za-z0-9]", "_");
    }

    // ---- task managers' JVMs ----

    /** Forces a full GC in the task manager (over JMX), then reads its live threads, heap and classes. */
    public JvmFigures gcAndMeasure(String taskManager) throws IOException {
        final MBeanServerConnection server = jmxOf(taskManager).getMBeanServerConnection();
        final MemoryMXBean memory = ManagementFactory.newPlatformMXBeanProxy(server,
                ManagementFactory.MEMORY_MXBEAN_NAME, MemoryMXBean.class);
        memory.gc();
        memory.gc();
        final ThreadMXBean threads = ManagementFactory.newPlatformMXBeanProxy(server,
                ManagementFactory.THREAD_MXBEAN_NAME, ThreadMXBean.class);
        final ClassLoadingMXBean classes = ManagementFactory.newPlatformMXBeanProxy(server,
                ManagementFactory.CLASS_LOADING_MXBEAN_NAME, ClassLoadingMXBean.class);
        long metaspace = -1;
        for (MemoryPoolMXBean pool : ManagementFactory.getPlatformMXBeans(server, MemoryPoolMXBean.class)) {
            if (pool.getName().equals("Metaspace")) {
                metaspace = pool.getUsage().getUsed();
            }
        }
        final Map<String, Integer> byName = new TreeMap<>();
        for (ThreadInfo info : threads.dumpAllThreads(false, false)) {
            if (info != null) {
                byName.merge(info.getThreadName().replaceAll("\\d+", "#"), 1, Integer::sum);
            }
        }
        return new JvmFigures(threads.getThreadCount(), memory.getHeapMemoryUsage().getUsed(), metaspace,
                classes.getLoadedClassCount(), liveUserCodeClassLoaders(server), userCodeClassLoaderIds(server),
                kafkaMBeans(server), byName);
    }

    /**
     * The user-code class loaders whose classes are loaded, each as its ClassLoaderData address (fixed for the
     * loader's life, so the same loader has the same id after each cycle) and its number of classes, from
     * jcmd VM.classloader_stats through JMX.
     */
    private static List<String> userCodeClassLoaderIds(MBeanServerConnection server) throws IOException {
        final String stats;
        try {
            stats = (String) server.invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"),
                    "vmClassloaderStats", new Object[] {new String[0]}, new String[] {String[].class.getName()});
        } catch (JMException e) {
            throw new IOException("VM.classloader_stats over JMX failed", e);
        }
        final List<String> ids = new ArrayList<>();
        for (String line : stats.split("\n")) {
            final String[] columns = line.trim().split("\\s+");
            if (columns.length >= 7
                    && columns[columns.length - 1].equals("org.apache.flink.util.ChildFirstClassLoader")) {
                ids.add(columns[2] + "(" + columns[3] + " classes)");
            }
        }
        return ids;
    }

    /** MBeans of Kafka clients (kafka.producer, kafka.consumer, ...): each open client registers some. */
    private static int kafkaMBeans(MBeanServerConnection server) throws IOException {
        try {
            return server.queryNames(new ObjectName("kafka.*:*"), null).size();
        } catch (JMException e) {
            throw new IOException(e);
        }
    }

    /**
     * Live instances of Flink's child-first user-code class loader (one per job and task manager while the job holds
     * slots there), from the class histogram of live objects (jcmd GC.class_histogram, through JMX).
     */
    private static long liveUserCodeClassLoaders(MBeanServerConnection server) throws IOException {
        final String histogram;
        try {
            histogram = (String) server.invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"),
                    "gcClassHistogram", new Object[] {new String[0]}, new String[] {String[].class.getName()});
        } catch (JMException e) {
            throw new IOException("GC.class_histogram over JMX failed", e);
        }
        long loaders = 0;
        for (String line : histogram.split("\n")) {
            final String[] columns = line.trim().split("\\s+");
            if (columns.length >= 4 && columns[3].equals("org.apache.flink.util.ChildFirstClassLoader")) {
                loaders += Long.parseLong(columns[1]);
            }
        }
        return loaders;
    }

    /** Writes a dump of the task manager's live heap (HotSpotDiagnosticMXBean, over JMX) to {@code file}. */
    public void dumpHeap(String taskManager, Path file) throws IOException {
        ManagementFactory.newPlatformMXBeanProxy(jmxOf(taskManager).getMBeanServerConnection(),
                "com.sun.management:type=HotSpotDiagnostic", com.sun.management.HotSpotDiagnosticMXBean.class)
                .dumpHeap(file.toAbsolutePath().toString(), true);
    }

    private JMXConnector jmxOf(String taskManager) throws IOException {
        final ClusterProcess tm;
        synchronized (this) {
            tm = taskManagers.get(taskManager);
        }
        if (tm == null) {
            throw new IllegalArgumentException("no task manager " + taskManager);
        }
        JMXConnector connector = jmx.get(taskManager);
        if (connector == null) {
            connector = JMXConnectorFactory.connect(new JMXServiceURL("service:jmx:rmi:///jndi/rmi://"
                    + ClusterSettings.LOOPBACK + ":" + tm.jmxPort() + "/jmxrmi"));
            jmx.put(taskManager, connector);
        }
        return connector;
    }

    private void closeJmx(String taskManager) {
        final JMXConnector connector = jmx.remove(taskManager);
        if (connector != null) {
            try {
                connector.close();
            } catch (IOException ignored) {
                // the process is going anyway
            }
        }
    }

    // ---- REST ----

    public JsonNode get(String path) {
        return send("GET", path, null);
    }

    private JsonNode tryGet(String path) {
        try {
            return get(path);
        } catch (RuntimeException e) {
            return null;
        }
    }

    private JsonNode send(String method, String path, String body) {
        final HttpRequest request = HttpRequest.newBuilder(URI.create("http://" + ClusterSettings.LOOPBACK + ":"
                        + restPort + path))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body))
                .build();
        try {
            final HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() / 100 != 2) {
                throw new IllegalStateException(method + " " + path + ": HTTP " + response.statusCode() + " "
                        + response.body());
            }
            return response.body().isEmpty() ? JSON.createObjectNode() : JSON.readTree(response.body());
        } catch (IOException e) {
            throw new UncheckedIOException(method + " " + path, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    // ---- waiting, logs, closing ----

    /** Polls {@code condition} until it holds; fails after {@link #SAFETY_NET} saying what was awaited. */
    public static void await(BooleanSupplier condition, String what) {
        await(condition, () -> what);
    }

    public static void await(BooleanSupplier condition, Supplier<String> what) {
        final long deadline = System.nanoTime() + SAFETY_NET.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + SAFETY_NET + " (a safety net): " + what.get());
            }
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting until " + what.get());
            }
        }
    }

    public Path logs() {
        return logs;
    }

    public Path home() {
        return home;
    }

    /** The last lines of every process's log and output, for a failed test. */
    public void printLogTails(java.io.PrintStream out) {
        try (Stream<Path> files = Files.list(logs)) {
            for (Path f : files.filter(p -> p.toString().endsWith(".log") || p.toString().endsWith(".out"))
                    .sorted().toList()) {
                out.println("==== last lines of " + f + " ====");
                out.println(tail(f, 60));
            }
        } catch (IOException e) {
            out.println("could not list " + logs + ": " + e);
        }
    }

    static String tail(Path file, int lines) {
        try {
            if (!Files.exists(file)) {
                return "(no " + file.getFileName() + ")";
            }
            final List<String> all = Files.readAllLines(file, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(unreadable: " + e + ")";
        }
    }

    /** Stops every process: SIGTERM, then SIGKILL for any still alive after 30 s; deletes the temporary directory. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (String id : List.copyOf(jmx.keySet())) {
            closeJmx(id);
        }
        final List<ClusterProcess> all = new ArrayList<>(taskManagers.values());
        if (jobManager != null) {
            all.add(jobManager);
        }
        taskManagers.clear();
        for (ClusterProcess p : all) {
            p.process().destroy();
        }
        for (ClusterProcess p : all) {
            try {
                if (!p.process().waitFor(30, TimeUnit.SECONDS)) {
                    p.process().destroyForcibly();
                    p.process().waitFor(30, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                p.process().destroyForcibly();
                Thread.currentThread().interrupt();
            } finally {
                LIVE.remove(p.process());
            }
        }
        try (Stream<Path> walk = Files.walk(home)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a temporary directory
        }
    }

    // ---- the class path of lib/ ----

    /**
     * What a Flink distribution's {@code lib/} would hold here: the test JVM's class path (Flink's artifacts, their
     * dependencies, log4j) minus, each for a reason written to {@code report}:
     * <ul>
     *   <li>directories: the project's own classes ({@code target/classes}, {@code target/test-classes});</li>
     *   <li>the project's jars ({@code flix-*.jar}, {@code examples*.jar});</li>
     *   <li>test jars ({@code *-tests.jar}): no distribution has them;</li>
     *   <li>Kafka's jars ({@code org/apache/kafka}: the clients, which the job jar carries, and the in-process
     *       broker's server jars);</li>
     *   <li>every jar that holds a class the job jar holds too (flink-connector-kafka, kafka-clients, jackson, jcuda,
     *       zstd, lz4, snappy): a class in both places breaks child-first loading, and for {@code org.apache.flink.*}
     *       (always parent-first) the connector would load from here and miss its Kafka classes.</li>
     * </ul>
     */
    static List<Path> flinkLib(Path jobJar, Path report) throws IOException {
        final String classPath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        final Set<String> jobClasses = classes(jobJar);
        final List<Path> lib = new ArrayList<>();
        final List<String> lines = new ArrayList<>();
        for (String entry : new java.util.LinkedHashSet<>(Arrays.asList(classPath.split(File.pathSeparator)))) {
            if (entry.isBlank()) {
                continue;
            }
            final Path path = Path.of(entry).toAbsolutePath().normalize();
            final String name = path.getFileName().toString();
            final String unix = path.toString().replace(File.separatorChar, '/');
            final String why;
            if (Files.isDirectory(path)) {
                why = "a directory (the project's classes)";
            } else if (!Files.isRegularFile(path) || !name.endsWith(".jar")) {
                why = "not a jar";
            } else if (name.startsWith("flix-") || name.startsWith("examples")) {
                why = "the project's own";
            } else if (name.endsWith("-tests.jar")) {
                why = "a test jar";
            } else if (unix.contains("/org/apache/kafka/")) {
                why = "Kafka: the job jar's clients, the in-process broker's server";
            } else {
                final String shared = firstShared(path, jobClasses);
                why = shared == null ? null : "the job jar holds " + shared + " too";
            }
            if (why == null) {
                lib.add(path);
                lines.add("lib      " + path);
            } else {
                lines.add("excluded " + path + ": " + why);
            }
        }
        Files.write(report, lines);
        return lib;
    }

    private static Set<String> classes(Path jar) throws IOException {
        final Set<String> names = new HashSet<>();
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            zip.stream().map(ZipEntry::getName).filter(n -> n.endsWith(".class") && !n.startsWith("META-INF/"))
                    .forEach(names::add);
        }
        return names;
    }

    private static String firstShared(Path jar, Set<String> jobClasses) throws IOException {
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            return zip.stream().map(ZipEntry::getName).filter(jobClasses::contains).findFirst().orElse(null);
        }
    }

    static String javaExecutable() {
        return ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }

    private static List<String> words(String text) {
        return Arrays.stream(text.trim().split("\\s+")).filter(w -> !w.isEmpty()).toList();
    }

    /** Every process logs to its own file ({@code -Dlog.file}), as Flink's scripts set it up. */
    private static final String LOG4J = String.join("\n",
            "rootLogger.level = INFO",
            "rootLogger.appenderRef.file.ref = MainAppender",
            "appender.main.name = MainAppender",
            "appender.main.type = File",
            "appender.main.append = true",
            "appender.main.fileName = ${sys:log.file}",
            "appender.main.layout.type = PatternLayout",
            "appender.main.layout.pattern = %d{HH:mm:ss,SSS} %-5p %-60c %x - %m%n",
            "logger.kafka.name = org.apache.kafka",
            "logger.kafka.level = WARN",
            "logger.hadoop.name = org.apache.hadoop",
            "logger.hadoop.level = WARN",
            "") + "\n";
}
