package io.flix.examples.cluster;

import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.PackagedProgram;
import org.apache.flink.client.program.PackagedProgramUtils;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Submits a job jar's program as Flink's client library does ({@link PackagedProgram} + {@link RestClusterClient}):
 * the program's main runs in this JVM in a child-first class loader of the jar's own and yields the job graph, which
 * goes with the jar to the job manager's REST API; the task managers load the job's classes in a new user-code class
 * loader, as for {@code flink run}. It saves the client process {@code flink run} starts for every submission.
 */
final class ProgramSubmission {

    private ProgramSubmission() {
    }

    /** Returns the job id. {@code savepoint} (or null): the savepoint to start from. */
    static String submit(Path confDir, String restAddress, int restPort, Path jobJar, String mainClass,
                         List<String> args, String savepoint) throws Exception {
        final Configuration config = GlobalConfiguration.loadConfiguration(confDir.toString());
        config.set(RestOptions.ADDRESS, restAddress);
        config.set(RestOptions.PORT, restPort);
        final Configuration programConfig = new Configuration(config);
        // this JVM has loaded Kafka's client classes itself (the tests' producers and consumers); the connector,
        // parent-first as all of org.apache.flink, links against those, so the program must see the same ones
        final List<String> parentFirst = new ArrayList<>(
                programConfig.get(CoreOptions.ALWAYS_PARENT_FIRST_LOADER_PATTERNS_ADDITIONAL));
        parentFirst.add("org.apache.kafka.");
        programConfig.set(CoreOptions.ALWAYS_PARENT_FIRST_LOADER_PATTERNS_ADDITIONAL, parentFirst);
        final SavepointRestoreSettings restore = savepoint == null ? SavepointRestoreSettings.none()
                : SavepointRestoreSettings.forPath(savepoint, false);
        final JobGraph graph;
        try (PackagedProgram program = PackagedProgram.newBuilder()
                .setJarFile(jobJar.toFile())
                .setEntryPointClassName(mainClass)
                .setArguments(args.toArray(String[]::new))
                .setConfiguration(programConfig)
                .setSavepointRestoreSettings(restore)
                .build()) {
            graph = PackagedProgramUtils.createJobGraph(program, programConfig, 1, true);
        }
        try (RestClusterClient<StandaloneClusterId> client = new RestClusterClient<>(config,
                StandaloneClusterId.getInstance())) {
            return client.submitJob(graph).get(FlinkSessionCluster.SAFETY_NET.toSeconds(), TimeUnit.SECONDS)
                    .toHexString();
        }
    }
}
