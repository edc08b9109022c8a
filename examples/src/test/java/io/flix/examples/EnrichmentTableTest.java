package io.flix.examples;

import io.flix.examples.EnrichmentBenchmark.Checkpoint;
import io.flix.examples.EnrichmentBenchmark.Contestant;
import io.flix.examples.EnrichmentBenchmark.Restore;
import io.flix.examples.EnrichmentBenchmark.Result;
import io.flix.index.Backend;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The benchmark's table: one row per contestant and object-reuse setting, medians, ratios of the same setting. */
class EnrichmentTableTest {

    private static final long KEYS = 1_000_000;

    @Test
    void rowsHoldTheMediansAndTheirRatiosToTheBaselinesOfTheSameSetting() {
        final Contestant shared = new Contestant("flix-shared", Backend.CPU);
        final List<Result> results = List.of(
                result(shared, false, 4e6, 8e6, 100 << 20), result(Contestant.of("heap"), false, 1e6, 2e6, 400 << 20),
                result(Contestant.of("ceiling-keyed"), false, 5e6, 4e6, 10 << 20),
                result(Contestant.of("ceiling-chained"), false, 5e6, 10e6, 10 << 20),
                result(Contestant.of("broadcast"), false, 2e6, 5e6, 800 << 20),
                result(shared, false, 2e6, 6e6, 100 << 20), result(shared, false, 3e6, 7e6, 300 << 20),
                result(shared, true, 3e6, 9e6, 100 << 20), result(Contestant.of("heap"), true, 1e6, 3e6, 400 << 20));

        final List<List<String>> rows = cells(EnrichmentTable.of(results));

        assertEquals(List.of("contestant", "backend", "object reuse", "runs", "load M/s", "lookups M/s",
                "CPU ns/lookup", "live heap", "index", "savepoint", "checkpoint", "pause ms", "restore s",
                "lookups / heap", "lookups / keyed ceiling",
                "lookups / chained ceiling", "load / heap", "live heap / heap", "live heap / broadcast"), rows.get(0));
        final List<String> sharedOff = rows.get(2);
        // medians of three runs: load 3, lookups 7, live heap 100 MiB
        assertEquals(List.of("flix-shared/cpu", "cpu", "off", "3", "3.000", "7.000", "500", "100.0 MiB (104.9 B/key)",
                "n/a", "-", "-", "-", "-", "3.50x", "1.75x", "0.70x", "3.00x", "0.25x", "0.13x"), sharedOff);
        assertEquals(List.of("heap", "hashmap", "off", "1", "1.000", "2.000", "500", "400.0 MiB (419.4 B/key)",
                "n/a", "-", "-", "-", "-", "1.00x", "0.50x", "0.20x", "1.00x", "1.00x", "0.50x"), rows.get(3));
        // with object reuse on: against the heap job with reuse on only; no ceilings ran with it
        assertEquals(List.of("flix-shared/cpu", "cpu", "on", "1", "3.000", "9.000", "500", "100.0 MiB (104.9 B/key)",
                "n/a", "-", "-", "-", "-", "3.00x", "-", "-", "3.00x", "0.25x", "-"), rows.get(7));
        assertEquals(9, rows.size(), "a header, its rule and seven rows");
    }

    @Test
    void recoveryCellsHoldTheMedianCheckpointPauseAndRestoreTimePerParallelism() {
        final Contestant keyed = new Contestant("flix-keyed", Backend.CPU);
        final List<Result> results = List.of(
                recovered(keyed, false, 4e6, 8e6, 100 << 20, new Checkpoint(900, 850, 1.5, 200 << 20),
                        List.of(new Restore(2, 3.0, 1000, 500), new Restore(3, 4.0, 1000, 500))),
                recovered(keyed, false, 4e6, 8e6, 100 << 20, new Checkpoint(700, 650, 1.0, 200 << 20),
                        List.of(new Restore(2, 2.0, 1000, 500), new Restore(3, 5.0, 1000, 500))),
                recovered(keyed, false, 4e6, 8e6, 100 << 20, new Checkpoint(800, 750, 2.0, 100 << 20),
                        List.of(new Restore(2, 2.5, 1000, 500), new Restore(3, 6.0, 1000, 500))),
                result(Contestant.of("ceiling-keyed"), false, 5e6, 4e6, 10 << 20));

        final List<List<String>> rows = cells(EnrichmentTable.of(results));

        final int checkpoint = rows.get(0).indexOf("checkpoint");
        // medians of three runs: 1.5 s, 200 MiB, a pause of 800 ms, restores of 2.5 s at p=2 and 5 s at p=3
        assertEquals(List.of("1.50 s, 200.0 MiB", "800", "2.50 (p=2), 5.00 (p=3)"),
                rows.get(2).subList(checkpoint, checkpoint + 3));
        assertEquals(List.of("-", "-", "-"), rows.get(3).subList(checkpoint, checkpoint + 3),
                "a contestant without state has no checkpoint or restore");
    }

    private static Result result(Contestant contestant, boolean reuse, double load, double lookups, long liveHeap) {
        return recovered(contestant, reuse, load, lookups, liveHeap, Checkpoint.NONE, List.of());
    }

    private static Result recovered(Contestant contestant, boolean reuse, double load, double lookups, long liveHeap,
                                    Checkpoint checkpoint, List<Restore> restores) {
        return new Result(contestant, reuse, contestant.flix() ? "cpu" : contestant.kind().equals("heap")
                || contestant.kind().equals("broadcast") ? "hashmap" : "none", KEYS, 2 * KEYS, KEYS, load, lookups,
                liveHeap, -1, Double.NaN, -1, 400, 500, checkpoint, restores);
    }

    private static List<List<String>> cells(String table) {
        final List<List<String>> rows = new ArrayList<>();
        for (String line : table.split("\n")) {
            final String[] parts = line.split("\\|");
            rows.add(Arrays.stream(parts, 1, parts.length).map(String::trim).toList());
        }
        return rows;
    }
}
