package io.flix.examples;

import io.flix.index.Backend;

import org.apache.flink.configuration.MemorySize;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The benchmark's --quick sizes, each contestant: all lookups come out, half of them (about) hits, the backend used. */
class EnrichmentBenchmarkSmokeTest {

    @ParameterizedTest
    @CsvSource({"flix, long", "heap, long", "rocksdb, long", "flix, product", "heap, product"})
    void quickRunMeasuresEveryContestant(String variant, String payload) throws Exception {
        final EnrichmentBenchmark.Result result = EnrichmentBenchmark.run(variant, payload, 20_000, 40_000, 2,
                Backend.CPU, MemorySize.parse("128m"), true);
        assertEquals(40_000, result.lookups());
        assertTrue(result.hits() > 16_000 && result.hits() < 24_000, "about half hits: " + result.hits());
        assertTrue(result.loadPerSecond() > 0 && result.lookupsPerSecond() > 0, result.toString());
        assertTrue(result.liveHeapBytes() > 0 && result.savepointSeconds() >= 0, result.toString());
        // FliX: the backend its subtasks reported through their metrics
        assertEquals(switch (variant) {
            case "flix" -> "cpu";
            case "rocksdb" -> "rocksdb";
            default -> "hashmap";
        }, result.backend());
    }

    @Test
    void statelessCeilingLoadsAndEmitsEveryOrderWithoutAPayload() throws Exception {
        final EnrichmentBenchmark.Result result = EnrichmentBenchmark.run("stateless", "long", 20_000, 40_000, 2,
                Backend.CPU, MemorySize.parse("128m"), false);
        assertEquals(40_000, result.lookups());
        assertEquals(0, result.hits(), "the ceiling keeps no state");
        assertTrue(result.loadPerSecond() > 0 && result.lookupsPerSecond() > 0, result.toString());
        assertEquals("none", result.backend());
    }
}
