package io.flix.examples;

import io.flix.examples.EnrichmentBenchmark.Restore;
import io.flix.examples.EnrichmentBenchmark.Result;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The {@link EnrichmentBenchmark}'s results as a Markdown table: one row per contestant and object-reuse setting,
 * the median of its runs, with its rates and memory against the heap-state job, the two ceilings (the keyed and the
 * chained job without state) and the broadcast-state job of the same object-reuse setting. Where measured, the
 * checkpoint of the loaded dimension (duration and size), its pause and the restore times, one per parallelism.
 */
final class EnrichmentTable {

    /** The runs of one contestant with one object-reuse setting. */
    private record Row(String label, boolean objectReuse, List<Result> runs) {
        double median(ToDoubleFunction<Result> field) {
            final double[] values = runs.stream().mapToDouble(field).sorted().toArray();
            final int middle = values.length / 2;
            return values.length % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
        }

        String backend() {
            return String.join(", ", runs.stream().map(Result::backend).distinct().toList());
        }
    }

    private EnrichmentTable() {
    }

    /** The table, each line ending with a line break. */
    static String of(List<Result> results) {
        final Map<String, Row> rows = new LinkedHashMap<>();
        for (Result result : results) {
            rows.computeIfAbsent(result.contestant().label() + "|" + result.objectReuse(),
                    k -> new Row(result.contestant().label(), result.objectReuse(), new ArrayList<>()))
                    .runs().add(result);
        }
        final StringBuilder out = new StringBuilder();
        out.append("| contestant | backend | object reuse | runs | load M/s | lookups M/s | CPU ns/lookup | live heap "
                + "| index | savepoint | checkpoint | pause ms | restore s | lookups / heap | lookups / keyed ceiling | lookups / chained ceiling "
                + "| load / heap | live heap / heap | live heap / broadcast |\n");
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Row row : rows.values()) {
            final long keys = row.runs().get(0).keys();
            final Row heap = rows.get("heap|" + row.objectReuse());
            final Row keyedCeiling = rows.get("ceiling-keyed|" + row.objectReuse());
            final Row chainedCeiling = rows.get("ceiling-chained|" + row.objectReuse());
            final Row broadcast = rows.get("broadcast|" + row.objectReuse());
            final double liveHeap = row.median(Result::liveHeapBytes);
            final double indexBytes = row.median(Result::indexBytes);
            final double savepointSeconds = row.median(Result::savepointSeconds);
            out.append(String.format(Locale.ROOT,
                    "| %s | %s | %s | %d | %.3f | %.3f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s"
                            + " | %s |%n",
                    row.label(), row.backend(), row.objectReuse() ? "on" : "off", row.runs().size(),
                    row.median(Result::loadPerSecond) / 1e6, row.median(Result::lookupsPerSecond) / 1e6,
                    row.median(Result::lookupCpuNanosPerLookup), bytes(liveHeap, keys),
                    indexBytes < 0 ? "n/a" : bytes(indexBytes, keys),
                    Double.isNaN(savepointSeconds) ? "-" : String.format(Locale.ROOT, "%.2f s, %.1f MiB",
                            savepointSeconds, row.median(Result::savepointBytes) / 1048576.0),
                    checkpoint(row), checkpointPause(row), restores(row),
                    ratio(row, heap, Result::lookupsPerSecond), ratio(row, keyedCeiling, Result::lookupsPerSecond),
                    ratio(row, chainedCeiling, Result::lookupsPerSecond), ratio(row, heap, Result::loadPerSecond),
                    ratio(row, heap, Result::liveHeapBytes), ratio(row, broadcast, Result::liveHeapBytes)));
        }
        return out.toString();
    }

    /** The checkpoint's median duration and size, or "-" where none was taken. */
    private static String checkpoint(Row row) {
        final double seconds = row.median(result -> result.checkpoint().seconds());
        return Double.isNaN(seconds) ? "-" : String.format(Locale.ROOT, "%.2f s, %.1f MiB", seconds,
                row.median(result -> result.checkpoint().bytes()) / 1048576.0);
    }

    private static String checkpointPause(Row row) {
        return row.runs().get(0).checkpoint().taken()
                ? String.format(Locale.ROOT, "%.0f", row.median(result -> result.checkpoint().pauseMillis())) : "-";
    }

    /** The median restore time at each parallelism restored, in the order restored; "-" where none was. */
    private static String restores(Row row) {
        final List<String> cells = new ArrayList<>();
        for (Restore restore : row.runs().get(0).restores()) {
            final int parallelism = restore.parallelism();
            cells.add(String.format(Locale.ROOT, "%.2f (p=%d)", row.median(result -> result.restores().stream()
                    .filter(r -> r.parallelism() == parallelism).findFirst().orElseThrow().seconds()), parallelism));
        }
        return cells.isEmpty() ? "-" : String.join(", ", cells);
    }

    private static String bytes(double bytes, long keys) {
        return String.format(Locale.ROOT, "%.1f MiB (%.1f B/key)", bytes / 1048576.0, bytes / keys);
    }

    /** The row's median against the reference row's, or "-" where there is none. */
    private static String ratio(Row row, Row reference, ToDoubleFunction<Result> field) {
        if (reference == null) {
            return "-";
        }
        final double of = reference.median(field);
        return of > 0 ? String.format(Locale.ROOT, "%.2fx", row.median(field) / of) : "-";
    }
}
