package io.flix.examples;

import io.flix.examples.SqlLookupJoinBenchmark.Contestant;
import io.flix.examples.SqlLookupJoinBenchmark.Result;

import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The SQL benchmark at a small size: every contestant runs, and each emits every order once, joined with its own
 * product's row (every row is checked by {@link JoinedOrders}; a wrong one fails the run).
 */
class SqlLookupJoinBenchmarkSmokeTest {

    @Test
    void everyContestantJoinsEveryOrderRight() throws Exception {
        final List<Result> results = SqlLookupJoinBenchmark.run(new long[] {2_000}, 10_000, 2,
                EnumSet.allOf(Contestant.class));
        assertEquals(EnumSet.allOf(Contestant.class).size(), results.size());
        for (Result result : results) {
            assertEquals(10_000, result.joined(), result.contestant().label);
            assertEquals(0, result.wrong(), result.contestant().label);
        }
        System.out.println(SqlLookupJoinBenchmark.table(results));
    }
}
