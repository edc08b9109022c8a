package io.flix.examples;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The SQL benchmark at a small size: both joins, and the orders alone, emit every order once. */
class SqlLookupJoinBenchmarkSmokeTest {

    @Test
    void bothJoinsEmitEveryOrder() throws Exception {
        final SqlLookupJoinBenchmark.Result[] results = SqlLookupJoinBenchmark.run(2_000, 10_000, 2);
        assertEquals(10_000, results[0].joined(), results[0].name());
        assertEquals(10_000, results[1].joined(), results[1].name());
        assertEquals(10_000, results[2].joined(), results[2].name());
        assertTrue(results[0].throughput() > 0 && results[1].throughput() > 0);
    }
}
