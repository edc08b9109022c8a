package io.flix.flink;

import io.flix.flink.testing.CommittedOutput;
import io.flix.flink.testing.Savepoints;
import io.flix.index.Backend;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A job at parallelism 2 loads the dimension and stops with a savepoint; a job at parallelism 3 resumes from it
 * and finds every key with its payload (and none of the deleted ones).
 */
class FlixEnrichmentSavepointRescaleITCase {

    private static final int KEYS = 4000;
    private static final long UPDATES = 15_000;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(5)
                    .build());

    @Test
    void savepointAtParallelism2ResumesAtParallelism3(@InjectMiniCluster MiniCluster cluster, @TempDir Path savepoints)
            throws Exception {
        final String load = "savepoint-load";
        JobParts.reset(load);
        final StreamExecutionEnvironment first = StreamExecutionEnvironment.getExecutionEnvironment();
        first.setParallelism(2);
        // sources that never end keep the job running until the savepoint
        enrichment(TestJobs.updatesThatStayOpen(first, UPDATES, KEYS, "updates-1"),
                TestJobs.lookups(first, Long.MAX_VALUE, KEYS, load, 5, "lookups-1"),
                JobParts.countingPayload(load, UPDATES), 2)
                .build().sinkTo(new DiscardingSink<>());
        final JobClient loading = first.executeAsync("load");
        JobParts.LOADED.get(load).get(2, TimeUnit.MINUTES);
        final String savepoint = Savepoints.stopWithSavepoint(cluster, loading, savepoints.toUri().toString(), 120);

        final String resume = "savepoint-resume";
        JobParts.reset(resume);
        final Configuration conf = new Configuration();
        conf.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        conf.set(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, true);
        final StreamExecutionEnvironment second = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        second.setParallelism(3);
        // no new updates: one update of a key nobody looks up opens the lookups' gate
        enrichment(second.fromData(Update.upsert(Long.MIN_VALUE, "unrelated")).uid("updates-2"),
                TestJobs.lookups(second, KEYS, KEYS, resume, 1_000_000, "lookups-2"),
                JobParts.countingPayload(resume, 1), 3)
                .build().transform("collect", Types.VOID, new CommittedOutput<>(resume))
                .setParallelism(1);
        second.execute("resume");

        final Map<Long, String> expected = new HashMap<>();
        final Map<Long, String> dimension = TestJobs.dimension(UPDATES, KEYS);
        for (long i = 0; i < KEYS; i++) {
            final long key = TestJobs.key(i, KEYS);
            expected.put(i, new Enriched<>(new Lookup(i, key, key), LookupKind.EXACT, dimension.get(key), null, null)
                    .toString());
        }
        final List<String> out = JobParts.COLLECTED.get(resume);
        assertEquals(KEYS, out.size());
        assertEquals(new java.util.HashSet<>(expected.values()), new java.util.HashSet<>(out));
        assertEquals(true, dimension.size() > KEYS / 2 && dimension.size() < KEYS, "some keys deleted");
    }

    private static <P> FlixEnrichment<Update, Lookup, String> enrichment(
            org.apache.flink.streaming.api.datastream.DataStream<Update> updates,
            org.apache.flink.streaming.api.datastream.DataStream<Lookup> lookups,
            PayloadFunction<Update, String> payload, int parallelism) {
        return FlixEnrichment.of(updates, lookups)
                .key(u -> u.key, l -> l.key)
                .payload(payload, Types.STRING)
                .batchSize(1000)
                .flushInterval(Duration.ofMillis(20))
                .backend(Backend.CPU)
                .threads(1)
                .uid("enrichment")
                .parallelism(parallelism);
    }
}
