package io.flix.examples.cluster;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** How the resubmit test counts a task manager's threads: Flink's machine-sized pools apart from everything else. */
class ResubmitThreadCountsTest {

    @Test
    void flinksPoolsAreCountedApartWithTheirBounds() {
        assertEquals(4 * Runtime.getRuntime().availableProcessors(),
                SessionClusterResubmitITCase.poolBound("flink-taskexecutor-io-thread-#"));
        assertEquals(64, SessionClusterResubmitITCase.poolBound("flink-pekko.actor.default-dispatcher-#"));
        assertEquals(64, SessionClusterResubmitITCase.poolBound("flink-pekko.remote.default-remote-dispatcher-#"));
        assertEquals(64,
                SessionClusterResubmitITCase.poolBound("flink-metrics-pekko.remote.default-remote-dispatcher-#"));
        assertNull(SessionClusterResubmitITCase.poolBound("flix-copy-#"));
        assertNull(SessionClusterResubmitITCase.poolBound("pool-#-thread-#"));
    }

    @Test
    void threadsOutsideFlinksPoolsAreWhatALeakWouldGrow() {
        final Map<String, Integer> cycle1 = Map.of("flink-taskexecutor-io-thread-#", 4, "Thread-#", 2,
                "flink-pekko.actor.default-dispatcher-#", 3);
        final Map<String, Integer> cycle5 = Map.of("flink-taskexecutor-io-thread-#", 16, "Thread-#", 2,
                "flink-pekko.actor.default-dispatcher-#", 5, "pool-#-thread-#", 3);
        assertEquals(2, SessionClusterResubmitITCase.outsideFlinkPools(cycle1));
        assertEquals(5, SessionClusterResubmitITCase.outsideFlinkPools(cycle5));
        assertEquals(Map.of("flink-taskexecutor-io-thread-#", 12, "flink-pekko.actor.default-dispatcher-#", 2,
                "pool-#-thread-#", 3), SessionClusterResubmitITCase.grown(cycle1, cycle5));
    }
}
