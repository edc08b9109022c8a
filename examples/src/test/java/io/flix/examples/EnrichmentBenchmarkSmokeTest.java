package io.flix.examples;

import io.flix.examples.EnrichmentBenchmark.Checkpoint;
import io.flix.examples.EnrichmentBenchmark.Contestant;
import io.flix.examples.EnrichmentBenchmark.Recovery;
import io.flix.examples.EnrichmentBenchmark.Restore;
import io.flix.examples.EnrichmentBenchmark.Result;
import io.flix.examples.EnrichmentBenchmark.Setup;
import io.flix.flink.FlushPolicy;
import io.flix.index.Backend;

import org.apache.flink.configuration.MemorySize;
import org.apache.flink.core.execution.SavepointFormatType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each contestant of the benchmark at tiny sizes: it loads the dimension, every lookup comes out, and the answers
 * are right (the benchmark checks each answer against the dimension and fails on a wrong one; here the hits are
 * counted against the orders' products as well); each contestant that keeps state takes a checkpoint of its loaded
 * dimension and is restored from its savepoint at several parallelisms, the restored jobs answering right. Not a
 * measurement: nothing here depends on speed.
 */
class EnrichmentBenchmarkSmokeTest {

    private static final long KEYS = 5_000;
    private static final long LOOKUPS = 10_000;
    /** The orders each restored job answers. */
    private static final long SAMPLE = 3_000;

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

    @ParameterizedTest
    @CsvSource({"flix-shared, canonical", "flix-keyed, canonical", "broadcast, canonical", "heap, canonical",
            "rocksdb, canonical", "flix-shared, native", "rocksdb, native"})
    void eachStatefulContestantIsCheckpointedAndRestoredAtEveryParallelism(String kind, String savepointFormat)
            throws Exception {
        final Contestant contestant = kind.startsWith("flix-") ? new Contestant(kind, Backend.CPU)
                : Contestant.of(kind);
        final Result result = EnrichmentBenchmark.run(contestant, Setup.of("long", KEYS, LOOKUPS, 2)
                .withRocksdbManaged(MemorySize.parse("128m"))
                .withSavepointFormat(SavepointFormatType.valueOf(savepointFormat.toUpperCase(Locale.ROOT)))
                .withRecovery(Recovery.restoreAt(List.of(2, 3, 1), SAMPLE)));

        assertEquals(EnrichmentBenchmark.expectedHits(KEYS, LOOKUPS), result.hits(), result.toString());
        final Checkpoint checkpoint = result.checkpoint();
        assertTrue(checkpoint.taken() && checkpoint.seconds() >= 0 && checkpoint.bytes() > 0
                && checkpoint.pauseMillis() >= 0, result.toString());
        // FliX's own account of the write, which is part of the pause; none for the others
        assertEquals(contestant.flix(), checkpoint.flixWriteMillis() >= 0, result.toString());
        // restored at each parallelism from the savepoint alone (the benchmark fails a restored job that applies an
        // update), every answer right (it fails a wrong one), and the hits those of the sample's products
        assertEquals(List.of(2, 3, 1), result.restores().stream().map(Restore::parallelism).toList());
        for (Restore restore : result.restores()) {
            assertEquals(SAMPLE, restore.lookups(), restore.toString());
            assertEquals(EnrichmentBenchmark.expectedHits(KEYS, SAMPLE), restore.hits(), restore.toString());
            assertTrue(restore.seconds() > 0, restore.toString());
        }
    }

    /** 32 slots: every keyBy exchange has 32 x 32 channels, more buffers than Flink's local default holds. */
    @Test
    void aJobWiderThanSixteenSlotsGetsTheNetworkBuffersOfItsExchanges() throws Exception {
        final Result result = EnrichmentBenchmark.run(new Contestant("flix-keyed", Backend.CPU),
                Setup.of("long", KEYS, LOOKUPS, 32).withSavepoint(false));

        assertEquals(LOOKUPS, result.lookups());
        assertEquals(EnrichmentBenchmark.expectedHits(KEYS, LOOKUPS), result.hits(), result.toString());
        assertEquals(MemorySize.ofMebiBytes(64), LocalJob.networkMemory(16));
        assertEquals(MemorySize.ofMebiBytes(256), LocalJob.networkMemory(32));
    }

    @ParameterizedTest
    @CsvSource({"flix-shared", "flix-keyed"})
    void theFlixIndexesRunOnTheThreadsAsked(String kind) throws Exception {
        final Result result = EnrichmentBenchmark.run(new Contestant(kind, Backend.CPU),
                Setup.of("long", KEYS, LOOKUPS, 2).withSavepoint(false).withFlixThreads(1));

        assertEquals(LOOKUPS, result.lookups());
        assertEquals(EnrichmentBenchmark.expectedHits(KEYS, LOOKUPS), result.hits(), result.toString());
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Setup.of("long", KEYS, LOOKUPS, 2).withFlixThreads(-1));
        assertTrue(e.getMessage().contains("threads"), e.getMessage());
    }

    @Test
    void aFlixVariantRunsOnEveryBackendAskedOrOnTheOneItsNameGives() {
        final List<Backend> both = List.of(Backend.CPU, Backend.GPU);
        assertEquals(List.of(new Contestant("flix-shared", Backend.CPU), new Contestant("flix-shared", Backend.GPU),
                        new Contestant("flix-keyed", Backend.CPU), Contestant.of("heap")),
                EnrichmentBenchmark.contestants(Args.of(new String[] {"--variants", "flix-shared,flix-keyed/cpu,heap"}),
                        both));
        assertEquals(List.of(new Contestant("flix-shared", Backend.GPU), new Contestant("flix-keyed", Backend.CPU)),
                EnrichmentBenchmark.contestants(Args.of(new String[] {"--variants", "flix-shared/GPU, flix-keyed"}),
                        List.of(Backend.CPU)));
        assertThrows(IllegalArgumentException.class, () -> EnrichmentBenchmark.contestants(
                Args.of(new String[] {"--variants", "heap/gpu"}), both), "a backend is for FliX contestants only");
        final IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> EnrichmentBenchmark.contestants(Args.of(new String[] {"--variants", "flix-shared/tpu"}), both));
        assertTrue(unknown.getMessage().contains("'tpu'") && unknown.getMessage().contains("cpu or gpu"),
                unknown.getMessage());
    }

    @ParameterizedTest
    @CsvSource({"flix-shared", "flix-keyed"})
    void theTimerFlushPolicyGivesTheSameAnswers(String kind) throws Exception {
        final Setup setup = Setup.of("long", KEYS, LOOKUPS, 2).withSavepoint(false);
        assertEquals(FlushPolicy.LOAD, setup.flushPolicy(), "the builder's default");
        final Result timer = EnrichmentBenchmark.run(new Contestant(kind, Backend.CPU),
                setup.withFlushPolicy(FlushPolicy.TIMER));
        assertEquals(LOOKUPS, timer.lookups());
        assertEquals(EnrichmentBenchmark.expectedHits(KEYS, LOOKUPS), timer.hits(), timer.toString());
        assertEquals(FlushPolicy.TIMER,
                EnrichmentBenchmark.flushPolicy(Args.of(new String[] {"--flush-policy", "timer"})));
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EnrichmentBenchmark.flushPolicy(Args.of(new String[] {"--flush-policy", "soon"})));
        assertTrue(e.getMessage().contains("load or timer"), e.getMessage());
    }

    @ParameterizedTest
    @CsvSource({"flix-shared", "flix-keyed"})
    void theExactKeyTableIsLeftOutWhereAskedAndTheAnswersStayRight(String kind) throws Exception {
        // batches on size and interval, as in both runs alike: under LOAD the batches, and so the index's nodes,
        // follow the timing of each run
        final Setup setup = Setup.of("long", KEYS, LOOKUPS, 2).withSavepoint(false)
                .withFlushPolicy(io.flix.flink.FlushPolicy.TIMER);
        final Result with = EnrichmentBenchmark.run(new Contestant(kind, Backend.CPU), setup);
        final Result without = EnrichmentBenchmark.run(new Contestant(kind, Backend.CPU),
                setup.withFlixExactKeyTable(false));

        assertEquals(EnrichmentBenchmark.expectedHits(KEYS, LOOKUPS), without.hits(), without.toString());
        assertEquals(with.hits(), without.hits());
        assertTrue(without.indexBytes() + 16L * KEYS <= with.indexBytes(),
                "the table's 16 bytes a slot, a quarter of them or more free, are gone: " + with.indexBytes() + " -> "
                        + without.indexBytes());
    }

    @Test
    void aContestantWithoutStateIsNeitherCheckpointedNorRestored() throws Exception {
        final Result result = EnrichmentBenchmark.run(Contestant.of("ceiling-keyed"),
                Setup.of("long", KEYS, LOOKUPS, 2).withRecovery(Recovery.restoreAt(List.of(2, 3), SAMPLE)));

        assertFalse(result.checkpoint().taken(), result.toString());
        assertEquals(List.of(), result.restores());
        assertEquals(LOOKUPS, result.lookups());
    }

    @Test
    void aRestoreNeedsTheSavepointItStartsFrom() {
        final Setup noSavepoint = Setup.of("long", KEYS, LOOKUPS, 2).withSavepoint(false);
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> noSavepoint.withRecovery(Recovery.restoreAt(List.of(2), SAMPLE)));
        assertTrue(e.getMessage().contains("savepoint"), e.getMessage());
    }
}
