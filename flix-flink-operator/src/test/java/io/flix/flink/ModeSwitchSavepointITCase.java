package io.flix.flink;

import io.flix.flink.testing.CommittedOutput;
import io.flix.flink.testing.Savepoints;
import io.flix.index.Backend;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
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
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * A savepoint taken in one mode and resumed in the other under the same uid: the restore fails naming the uid and
 * the way out, instead of the dimension starting empty and every lookup answering none. (The sources' uids change
 * between the jobs, so the restores allow non-restored state, as a user switching sources would.)
 */
class ModeSwitchSavepointITCase {

    private static final int KEYS = 300;
    /** Updates loaded before the savepoint: they leave {@code TestJobs.dimension(UPDATES, KEYS)}, 139 keys. */
    private static final long UPDATES = 3_000;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(4)
                    .build());

    @Test
    void aKeyedSavepointResumedInTheSharedModeFailsNamingTheUid(@InjectMiniCluster MiniCluster cluster,
                                                                 @TempDir Path savepoints) throws Exception {
        final Throwable failure = switchModes(cluster, savepoints, "switch-keyed", false);
        assertNamed(failure, "'switch-keyed'", "FlixEnrichment.of(...)");
    }

    @Test
    void aSharedSavepointResumedInTheKeyedModeFailsNamingTheUid(@InjectMiniCluster MiniCluster cluster,
                                                                 @TempDir Path savepoints) throws Exception {
        final Throwable failure = switchModes(cluster, savepoints, "switch-shared", true);
        assertNamed(failure, "'switch-shared'", "FlixEnrichment.shared(...)");
    }

    /** Loads {@code KEYS} keys in one mode, stops with a savepoint, resumes in the other; returns its failure. */
    private static Throwable switchModes(MiniCluster cluster, Path savepoints, String uid, boolean sharedFirst)
            throws Exception {
        final String load = uid + "-load";
        JobParts.reset(load);
        final StreamExecutionEnvironment first = StreamExecutionEnvironment.getExecutionEnvironment();
        first.setParallelism(2);
        enrichment(sharedFirst, TestJobs.updatesThatStayOpen(first, UPDATES, KEYS, "updates-1"),
                TestJobs.lookups(first, Long.MAX_VALUE, KEYS, load, 5, "lookups-1"),
                JobParts.countingPayload(load, UPDATES), uid)
                .build().sinkTo(new DiscardingSink<>());
        final JobClient loading = first.executeAsync("load");
        JobParts.LOADED.get(load).get(2, TimeUnit.MINUTES);
        final String savepoint = Savepoints.stopWithSavepoint(cluster, loading, savepoints.toUri().toString(), 120);

        final String resume = uid + "-resume";
        JobParts.reset(resume);
        final Configuration conf = new Configuration();
        conf.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        conf.set(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, true);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        final StreamExecutionEnvironment second = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        second.setParallelism(2);
        enrichment(!sharedFirst, second.fromData(Update.upsert(Long.MIN_VALUE, "unrelated")).uid("updates-2"),
                TestJobs.lookups(second, KEYS, KEYS, resume, 1_000_000, "lookups-2"),
                JobParts.countingPayload(resume, 1), uid)
                .build().transform("collect", Types.VOID, new CommittedOutput<>(resume))
                .setParallelism(1);
        try {
            second.execute("resume");
        } catch (Exception e) {
            return e;
        }
        final List<String> out = JobParts.COLLECTED.get(resume);
        final long none = out.stream().filter(s -> s.endsWith("-> null}")).count();
        return fail("the savepoint was resumed in the other mode without an error: " + none + " of " + out.size()
                + " lookups answered none, where the savepoint's dimension held "
                + TestJobs.dimension(UPDATES, KEYS).size() + " of the keys looked up; e.g. "
                + out.stream().limit(1).toList());
    }

    private static void assertNamed(Throwable failure, String uid, String wayOut) {
        final StringBuilder chain = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            chain.append(t.getMessage()).append(" | ");
        }
        assertTrue(chain.toString().contains("uid " + uid) && chain.toString().contains(wayOut), chain.toString());
    }

    private static FlixEnrichment<Update, Lookup, String> enrichment(boolean shared, DataStream<Update> updates,
                                                                     DataStream<Lookup> lookups,
                                                                     PayloadFunction<Update, String> payload,
                                                                     String uid) {
        return (shared ? FlixEnrichment.shared(updates, lookups) : FlixEnrichment.of(updates, lookups))
                .key(u -> u.key, l -> l.key)
                .payload(payload, Types.STRING)
                .batchSize(100)
                .flushInterval(Duration.ofMillis(20))
                .backend(Backend.CPU)
                .threads(1)
                .uid(uid);
    }
}
