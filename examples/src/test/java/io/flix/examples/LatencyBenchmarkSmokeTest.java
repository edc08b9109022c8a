package io.flix.examples;

import io.flix.examples.LatencyBenchmark.Report;
import io.flix.examples.LatencyBenchmark.Row;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The latency benchmark at tiny sizes ({@code --quick}): every contestant at every rate and buffer timeout has its
 * row, every order the source offered in a measured phase has its latency recorded, the percentiles are in order
 * and the CSV and summary are written. Structure only: nothing here depends on speed.
 */
class LatencyBenchmarkSmokeTest {

    private static final List<String> CONTESTANTS = List.of("flix-shared/cpu", "flix-keyed/cpu", "heap", "rocksdb",
            "ceiling-chained");
    private static final List<Double> RATES = List.of(0.1, 0.5, 0.9, 2.0);
    private static final List<Long> TIMEOUTS = List.of(100L, 1L);
    private static final double PHASE_SECONDS = 0.2;

    @Test
    void everyContestantRateAndTimeoutIsMeasuredAndWritten(@TempDir Path out) throws Exception {
        final Report report = LatencyBenchmark.run(new String[] {"--quick", "--backend", "cpu",
                "--rocksdb-managed", "128m", "--phase-seconds", String.valueOf(PHASE_SECONDS), "--warmup-seconds", "0.1",
                "--flush-ms", "20", "--out", out.toString()});

        assertTrue(report.heapMaxMeasured() && report.heapMaxPerSecond() > 0, report.toString());
        final List<Row> rows = report.rows();
        assertEquals(CONTESTANTS.size() * RATES.size() * TIMEOUTS.size(), rows.size(), rows.toString());
        for (long timeout : TIMEOUTS) {
            for (String contestant : CONTESTANTS) {
                for (double rate : RATES) {
                    final List<Row> matching = rows.stream().filter(r -> r.bufferTimeoutMillis() == timeout
                            && r.contestant().equals(contestant) && r.rateFraction() == rate).toList();
                    assertEquals(1, matching.size(), contestant + " at " + rate + "x, " + timeout + " ms: " + rows);
                }
            }
        }
        for (Row row : rows) {
            assertTrue(row.emitted() > 0, row.toString());
            assertEquals(row.emitted(), row.recorded(), "every order offered came out with its latency: " + row);
            // the phase's orders at its rate, split over the 2 source subtasks
            assertEquals(row.offeredPerSecond() * PHASE_SECONDS, row.emitted(), 2, row.toString());
            assertTrue(row.p50() <= row.p99() && row.p99() <= row.p999() && row.p999() <= row.max(), row.toString());
            assertEquals(row.rateFraction() * report.heapMaxPerSecond(), row.offeredPerSecond(),
                    1e-6 * row.offeredPerSecond(), row.toString());
        }

        final List<String> csv = Files.readAllLines(out.resolve("latency.csv"));
        assertEquals(LatencyBenchmark.CSV_HEADER, csv.get(0));
        assertEquals(rows.size() + 1, csv.size());
        assertTrue(Files.readString(out.resolve("summary.md")).contains("| flix-shared/cpu |"));
        // drawn, or the summary says why not (a runtime without fonts)
        assertTrue(!report.plots().isEmpty() || !report.notes().isEmpty(), report.toString());
        for (Path plot : report.plots()) {
            assertTrue(Files.size(plot) > 0, plot.toString());
        }

        // the CSV read back, as --plot-from does for a run on a machine that cannot draw
        final Path drawn = out.resolve("drawn");
        try {
            final Report replotted = LatencyBenchmark.run(new String[] {"--plot-from",
                    out.resolve("latency.csv").toString(), "--out", drawn.toString()});
            assertEquals(rows.size(), replotted.rows().size());
            for (int i = 0; i < rows.size(); i++) {
                final Row read = replotted.rows().get(i);
                final Row written = rows.get(i);
                assertEquals(written.contestant(), read.contestant());
                assertEquals(written.bufferTimeoutMillis(), read.bufferTimeoutMillis());
                assertEquals(written.emitted(), read.emitted());
                assertEquals(written.p99(), read.p99(), 100, "to the CSV's 0.1 us");
            }
            assertEquals(TIMEOUTS.size(), replotted.plots().size());
            for (Path plot : replotted.plots()) {
                assertTrue(Files.size(plot) > 0, plot.toString());
            }
        } catch (LinkageError | java.awt.AWTError | InternalError e) {
            assertTrue(report.plots().isEmpty(), "the run drew its plots, so drawing them again must work: " + e);
        }
    }

    @Test
    void theScheduleSplitsEachPhaseOverTheLanesAtItsRate() {
        final PacedOrderSource.Schedule schedule = new PacedOrderSource.Schedule(new double[] {1000, 10_000},
                new double[] {0.5, 2});
        assertEquals(500, schedule.orders(0, 1));
        assertEquals(500, schedule.orders(0, 3));
        assertEquals(20_000, schedule.orders(1, 7));
        assertEquals(500_000_000L, schedule.startNanos(1));
        assertEquals(2_500_000_000L, schedule.startNanos(2));
    }
}
