package io.flix.examples;

import io.flix.examples.EnrichmentBenchmark.Contestant;
import io.flix.examples.EnrichmentBenchmark.Result;
import io.flix.examples.EnrichmentBenchmark.Setup;
import io.flix.index.Backend;

import org.apache.flink.configuration.MemorySize;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each contestant of the benchmark at tiny sizes: it loads the dimension, every lookup comes out, and the answers
 * are right (the benchmark checks each answer against the dimension and fails on a wrong one; here the hits are
 * counted against the orders' products as well). Not a measurement: nothing here depends on speed.
 */
class EnrichmentBenchmarkSmokeTest {

    private static final long KEYS = 5_000;
    private static final long LOOKUPS = 10_000;

    @ParameterizedTest
    @CsvSource({
            "flix-shared, long, false", "flix-keyed, long, false", "broadcast, long, false", "heap, long, false",
            "rocksdb, long, false", "ceiling-keyed, long, false", "ceiling-chained, long, false",
            "flix-shared, product, false", "flix-keyed, product, false", "broadcast, product, false",
            "flix-shared, product, true", "flix-keyed, long, true", "ceiling-chained, long, true"})
    void eachContestantLoadsAndAnswersEveryLookup(String kind, String payload, boolean objectReuse)
            throws Exception {
        final Contestant contestant = kind.startsWith("flix-") ? new Contestant(kind, Backend.CPU)
                : Contestant.of(kind);
        final Result result = EnrichmentBenchmark.run(contestant, Setup.of(payload, KEYS, LOOKUPS, 2)
                .withObjectReuse(objectReuse).withRocksdbManaged(MemorySize.parse("128m")));

        assertEquals(LOOKUPS, result.lookups());
        final long expectedHits = kind.startsWith("ceiling-") ? 0 : EnrichmentBenchmark.expectedHits(KEYS, LOOKUPS);
        assertEquals(expectedHits, result.hits(), result.toString());
        assertTrue(expectedHits == 0 || expectedHits > LOOKUPS / 3, "about half the orders hit: " + expectedHits);
        assertEquals(objectReuse, result.objectReuse());
        assertTrue(result.loadPerSecond() > 0 && result.lookupsPerSecond() > 0, result.toString());
        assertTrue(result.liveHeapBytes() > 0 && result.savepointSeconds() >= 0 && result.savepointBytes() > 0,
                result.toString());
        // FliX: the backend its subtasks reported through their metrics
        assertEquals(switch (kind) {
            case "flix-shared", "flix-keyed" -> "cpu";
            case "rocksdb" -> "rocksdb";
            case "heap", "broadcast" -> "hashmap";
            default -> "none";
        }, result.backend());
        if (kind.equals("flix-keyed")) {
            assertTrue(result.indexBytes() > 0, "the subtasks' indexes report their bytes: " + result);
        }
    }
}
