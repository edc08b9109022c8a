package io.flix.examples;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.core.execution.CheckpointType;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CheckpointStatsStatus;
import org.apache.flink.runtime.checkpoint.SubtaskStateStats;
import org.apache.flink.runtime.checkpoint.TaskStateStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.minicluster.MiniClusterJobClient;
import org.apache.flink.runtime.minicluster.RpcServiceSharing;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

import java.util.concurrent.TimeUnit;

/**
 * A job on a local cluster of its own, started as {@link StreamExecutionEnvironment#createLocalEnvironment} starts
 * one (a MiniCluster in this JVM: one task manager, a slot per subtask of the widest operator), with what a
 * {@link JobClient} does not give: a checkpoint on demand and the statistics Flink keeps of it (those its web UI
 * shows). Closing it shuts the cluster down.
 */
final class LocalJob implements AutoCloseable {

    /** How long a completed checkpoint's statistics may take to reach the job's statistics; a safety net. */
    private static final long STATS_TIMEOUT_NANOS = TimeUnit.MINUTES.toNanos(1);
    /**
     * Network memory for each pair of sending and receiving slots: an all-to-all exchange has slots x slots
     * channels, so Flink's local default (64 MiB, enough up to 16 slots) runs out of buffers beyond that.
     */
    private static final long NETWORK_BYTES_PER_SLOT_PAIR = 256L << 10;
    private static final MemorySize LOCAL_DEFAULT_NETWORK_MEMORY = MemorySize.ofMebiBytes(64);

    /** A completed checkpoint as Flink's statistics describe it. */
    record CheckpointStats(long id, long pauseMillis, double seconds, long bytes) {
    }

    private final MiniCluster cluster;
    private final JobClient client;
    private final long submittedNanos;

    private LocalJob(MiniCluster cluster, JobClient client, long submittedNanos) {
        this.cluster = cluster;
        this.client = client;
        this.submittedNanos = submittedNanos;
    }

    /**
     * Starts a cluster for the environment's job and submits it, restored from {@code restorePath} (a savepoint or
     * retained checkpoint, state of operators not in the job skipped) where it is not null.
     */
    static LocalJob start(StreamExecutionEnvironment env, Configuration conf, String name, String restorePath)
            throws Exception {
        final StreamGraph graph = env.getStreamGraph();
        graph.setJobName(name);
        if (restorePath != null) {
            graph.setSavepointRestoreSettings(SavepointRestoreSettings.forPath(restorePath, true));
        }
        graph.serializeUserDefinedInstances();
        final Configuration clusterConf = new Configuration(conf);
        if (!clusterConf.contains(RestOptions.BIND_PORT)) {
            clusterConf.set(RestOptions.BIND_PORT, "0");
        }
        final int taskManagers = clusterConf.get(TaskManagerOptions.MINI_CLUSTER_NUM_TASK_MANAGERS);
        final int slots = clusterConf.getOptional(TaskManagerOptions.NUM_TASK_SLOTS)
                .orElse((graph.getMaximumParallelism() + taskManagers - 1) / taskManagers);
        if (!clusterConf.contains(TaskManagerOptions.NETWORK_MEMORY_MIN)
                && !clusterConf.contains(TaskManagerOptions.NETWORK_MEMORY_MAX)) {
            final MemorySize network = networkMemory(slots);
            clusterConf.set(TaskManagerOptions.NETWORK_MEMORY_MIN, network);
            clusterConf.set(TaskManagerOptions.NETWORK_MEMORY_MAX, network);
        }
        final MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(clusterConf)
                .setNumTaskManagers(taskManagers)
                .setNumSlotsPerTaskManager(slots)
                .setRpcServiceSharing(RpcServiceSharing.SHARED)
                .build());
        try {
            cluster.start();
            final long submitted = System.nanoTime();
            final JobID id = cluster.submitJob(graph).get().getJobID();
            return new LocalJob(cluster, new MiniClusterJobClient(id, cluster, LocalJob.class.getClassLoader(),
                    MiniClusterJobClient.JobFinalizationBehavior.NOTHING), submitted);
        } catch (Exception e) {
            cluster.close();
            throw e;
        }
    }

    /** Network memory of a task manager with {@code slots} slots: Flink's local default, more past 16 slots. */
    static MemorySize networkMemory(int slots) {
        return new MemorySize(Math.max(LOCAL_DEFAULT_NETWORK_MEMORY.getBytes(),
                (long) slots * slots * NETWORK_BYTES_PER_SLOT_PAIR));
    }

    JobClient client() {
        return client;
    }

    /** {@link System#nanoTime()} just before the job was submitted (its cluster already started). */
    long submittedNanos() {
        return submittedNanos;
    }

    /**
     * Takes a full checkpoint now and returns, once it completed: its end-to-end duration and state size, and as its
     * pause the longest synchronous part of the checkpoint on any subtask of the tasks whose name contains
     * {@code operator} (the part during which a task processes nothing: Flink's "sync duration").
     */
    CheckpointStats checkpoint(String operator) throws Exception {
        final JobID jobId = client.getJobID();
        final long id = cluster.triggerCheckpoint(jobId, CheckpointType.FULL).get(1, TimeUnit.HOURS);
        final long deadline = System.nanoTime() + STATS_TIMEOUT_NANOS;
        while (true) {
            final AccessExecutionGraph graph = cluster.getExecutionGraph(jobId).get(1, TimeUnit.MINUTES);
            final AbstractCheckpointStats stats = graph.getCheckpointStatsSnapshot().getHistory()
                    .getCheckpointById(id);
            if (stats != null && stats.getStatus() == CheckpointStatsStatus.COMPLETED) {
                return new CheckpointStats(id, pauseMillis(graph, stats, operator),
                        stats.getEndToEndDuration() / 1e3, stats.getStateSize());
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("checkpoint " + id + " of job " + jobId + " completed, but its "
                        + "statistics say " + (stats == null ? "nothing" : stats.getStatus().toString()));
            }
            Thread.sleep(10);
        }
    }

    private static long pauseMillis(AccessExecutionGraph graph, AbstractCheckpointStats stats, String operator) {
        long pause = -1;
        for (AccessExecutionJobVertex vertex : graph.getVerticesTopologically()) {
            if (!vertex.getName().contains(operator)) {
                continue;
            }
            final TaskStateStats task = stats.getTaskStateStats(vertex.getJobVertexId());
            if (task == null) {
                continue;
            }
            for (SubtaskStateStats subtask : task.getSubtaskStats()) {
                if (subtask != null) {
                    pause = Math.max(pause, subtask.getSyncCheckpointDuration());
                }
            }
        }
        if (pause < 0) {
            throw new IllegalStateException("no task whose name contains '" + operator + "' took part in checkpoint "
                    + stats.getCheckpointId());
        }
        return pause;
    }

    @Override
    public void close() throws Exception {
        cluster.close();
    }
}
