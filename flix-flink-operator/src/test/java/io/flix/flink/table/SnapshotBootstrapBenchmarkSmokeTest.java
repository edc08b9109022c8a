package io.flix.flink.table;

import org.junit.jupiter.api.Test;

/** The bootstrap benchmark runs through, at a small size. */
class SnapshotBootstrapBenchmarkSmokeTest {

    @Test
    void runsAtASmallSize() throws Exception {
        SnapshotBootstrapBenchmark.main(new String[] {"--keys", "20000", "--partitions", "2", "--suffix", "500",
                "--baseline-seconds", "1"});
    }
}
