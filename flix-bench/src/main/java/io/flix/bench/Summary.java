package io.flix.bench;

import io.flix.bench.BenchOptions.XyWorkload;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;

/** The Markdown summary: medians over rounds per workload and operation, and ratios of FliX to each baseline. */
final class Summary {

    private static final List<String> TIMED = List.of("build", "insert", "delete", "get_hit_sorted",
            "get_hit_unsorted", "get_miss_sorted", "get_miss_unsorted", "ceiling", "range", "sort_pairs");

    private Summary() {
    }

    static String markdown(BenchOptions o, List<Bench.Result> results, List<Bench.RestructureResult> restructures,
                           List<String> notes, List<String> devices, List<Path> plots) {
        final StringBuilder md = new StringBuilder();
        md.append("# FliX benchmark\n\n");
        md.append("- date: ").append(java.time.LocalDate.now()).append('\n');
        md.append("- devices: ").append(String.join("; ", devices)).append('\n');
        md.append("- java: ").append(System.getProperty("java.vm.name")).append(' ')
                .append(System.getProperty("java.version")).append(", max heap ")
                .append(Runtime.getRuntime().maxMemory() >> 20).append(" MiB\n");
        md.append(String.format(Locale.ROOT, "- backend %s, %s keys; build %d, %d insert rounds then %d delete rounds "
                        + "of %d keys; %d lookups of each kind and %d ranges of %d keys after every round; "
                        + "FliX CPU threads %d; seed %d%n",
                o.backend(), o.distribution().label(), o.buildSize(), o.rounds(), o.rounds(), o.batchSize(),
                o.probeSize(), o.rangeCount(), o.rangeKeys(), o.threads(), o.seed()));
        md.append("- every answer was checked against the generated keys (a wrong one fails the run)\n");
        notes.forEach(n -> md.append("- ").append(n).append('\n'));
        md.append("""

                Cells: median time in ms over the rounds (million operations per second). insert: the insert rounds;
                delete: the delete rounds; lookups: after the build and every round. Ratio columns: the baseline's
                median time over FliX's (above 1: FliX is faster); in memory rows the baseline's bytes over FliX's
                (above 1: FliX is smaller). Sorted lookups get their batch sorted before the clock starts; unsorted
                ones are timed with the sort (FliX sorts inside). A hash map has no successor or range lookups: its
                cells are left empty. JDK maps' bytes are modelled from object sizes (see SortedMapStructure);
                FliX's and the hash map's are the arrays they hold (on the GPU: the node pool and bucket arrays;
                the sorted array: its two arrays; reusable batch scratch is not counted).
                Backend gpu: end to end (Java arrays in and out, host copies included); gpu-resident: the device
                work alone (batch already on the device, results left there; the sort of an unsorted batch counted;
                build and range stay end to end). Ratios compare like with like: the same backend label, or a
                CPU baseline against FliX end to end. sort_pairs: the indexes' sort of an unsorted batch alone
                (CUB radix sort of the hit probes with their positions).
                """);
        for (XyWorkload workload : o.workloads()) {
            appendWorkload(md, o, workload.label(), filter(results, r -> r.workload().equals(workload.label())));
        }
        appendTargets(md, o, results, restructures);
        if (!restructures.isEmpty()) {
            md.append("\n## Restructure after the delete rounds\n\n");
            md.append("| structure | workload | ms | nodes before | nodes after | recovered | % recovered "
                    + "| MiB before | MiB after |\n|---|---|---|---|---|---|---|---|---|\n");
            for (Bench.RestructureResult r : restructures) {
                md.append(String.format(Locale.ROOT, "| %s | %s | %.1f | %d | %d | %d | %.1f%% | %.1f | %.1f |%n",
                        r.label(), r.workload(), r.ms(), r.nodesBefore(), r.nodesAfter(), r.recovered(),
                        r.nodesBefore() == 0 ? 0.0 : 100.0 * r.recovered() / r.nodesBefore(),
                        r.bytesBefore() / 1048576.0, r.bytesAfter() / 1048576.0));
            }
        }
        if (!plots.isEmpty()) {
            md.append("\n## Plots\n\n");
            plots.forEach(p -> md.append("![").append(p.getFileName()).append("](").append(p.getFileName())
                    .append(")\n"));
        }
        return md.toString();
    }

    private static void appendWorkload(StringBuilder md, BenchOptions o, String workload, List<Bench.Result> rows) {
        final List<String> labels = new ArrayList<>(new LinkedHashSet<>(rows.stream().map(Bench.Result::label)
                .toList()));
        final List<String[]> ratios = new ArrayList<>();
        for (String flix : labels) {
            if (flix.startsWith("flix-")) {
                labels.stream().filter(b -> !b.startsWith("flix-") && comparable(flix, b))
                        .forEach(b -> ratios.add(new String[] {flix, b}));
            }
        }
        md.append("\n## Workload ").append(workload).append("\n\n| operation |");
        labels.forEach(l -> md.append(' ').append(l).append(" |"));
        ratios.forEach(r -> md.append(' ').append(r[1]).append(" / ").append(r[0]).append(" |"));
        md.append("\n|---|");
        labels.forEach(l -> md.append("---|"));
        ratios.forEach(r -> md.append("---|"));
        md.append('\n');
        for (String op : TIMED) {
            if (rows.stream().noneMatch(r -> r.operation().equals(op))) {
                continue;
            }
            md.append("| ").append(op).append(" |");
            for (String l : labels) {
                final List<Bench.Result> cell = filter(rows, r -> r.label().equals(l) && r.operation().equals(op));
                if (cell.isEmpty()) {
                    md.append(" |");
                } else {
                    final double ms = median(cell.stream().mapToDouble(Bench.Result::ms).toArray());
                    md.append(String.format(Locale.ROOT, " %.2f (%.2f) |", ms, cell.get(0).batchSize() / ms / 1e3));
                }
            }
            for (String[] r : ratios) {
                final double flix = medianMs(rows, r[0], op);
                final double base = medianMs(rows, r[1], op);
                md.append(Double.isNaN(flix) || Double.isNaN(base) ? " |"
                        : String.format(Locale.ROOT, " %.2fx |", base / flix));
            }
            md.append('\n');
        }
        final int last = 2 * o.rounds();
        appendMemoryRow(md, rows, labels, ratios, "bytes/key after build", 0);
        appendMemoryRow(md, rows, labels, ratios, "bytes/key after inserts", o.rounds());
        appendMemoryRow(md, rows, labels, ratios, "bytes/key after deletes", last);
        md.append("| sorted hit lookups/s per byte (median) |");
        for (String l : labels) {
            md.append(String.format(Locale.ROOT, " %.3g |", Plots.queriesPerSecondPerByte(rows, l, "get_hit_sorted")));
        }
        for (String[] r : ratios) {
            md.append(String.format(Locale.ROOT, " %.2fx |", Plots.queriesPerSecondPerByte(rows, r[0], "get_hit_sorted")
                    / Plots.queriesPerSecondPerByte(rows, r[1], "get_hit_sorted")));
        }
        md.append('\n');
    }

    /** The backend part of a label ("flix-gpu-resident" -> "gpu-resident"). */
    static String backendOf(String label) {
        for (String backend : List.of(ResidentStructure.BACKEND, "gpu", "cpu")) {
            if (label.endsWith("-" + backend)) {
                return backend;
            }
        }
        return label.substring(label.lastIndexOf('-') + 1);
    }

    /** Like with like: the same backend label, or a CPU baseline against FliX timed end to end. */
    private static boolean comparable(String flixLabel, String baselineLabel) {
        final String f = backendOf(flixLabel);
        final String b = backendOf(baselineLabel);
        return f.equals(b) || (b.equals("cpu") && !f.equals(ResidentStructure.BACKEND));
    }

    /**
     * The GPU targets (device-resident FliX, medians over rounds per workload) beside what was measured. Only
     * where the run has flix-gpu-resident rows.
     */
    private static void appendTargets(StringBuilder md, BenchOptions o, List<Bench.Result> results,
                                      List<Bench.RestructureResult> restructures) {
        final String label = "flix-" + ResidentStructure.BACKEND;
        if (results.stream().noneMatch(r -> r.label().equals(label))) {
            return;
        }
        md.append("\n## GPU targets (flix-gpu-resident, medians over the rounds)\n\n| target |");
        o.workloads().forEach(w -> md.append(' ').append(w.label()).append(" |"));
        md.append("\n|---|");
        o.workloads().forEach(w -> md.append("---|"));
        md.append('\n');
        final String[][] throughputTargets = {
            {"get_hit_sorted", "sorted point lookups >= 40 G/s", "40"},
            {"get_hit_unsorted", "unsorted point lookups (sort counted) >= 8 G/s", "8"},
            {"get_miss_unsorted", "unsorted all-miss lookups (sort counted) >= 8 G/s", "8"},
            {"insert", "unsorted inserts (sort counted) >= 4 G/s", "4"},
            {"delete", "unsorted deletes (sort counted) >= 4 G/s", "4"},
            {"sort_pairs", "GPU sort (key + position) >= 10 G/s", "10"}};
        for (String[] t : throughputTargets) {
            md.append("| ").append(t[1]).append(" |");
            for (XyWorkload w : o.workloads()) {
                final List<Bench.Result> rows = filter(results, r -> r.label().equals(label)
                        && r.workload().equals(w.label()) && r.operation().equals(t[0]));
                if (rows.isEmpty()) {
                    md.append(" |");
                    continue;
                }
                final double ms = median(rows.stream().mapToDouble(Bench.Result::ms).toArray());
                final double giga = rows.get(0).batchSize() / ms / 1e6;
                md.append(String.format(Locale.ROOT, " %.2f G/s %s |", giga,
                        giga >= Double.parseDouble(t[2]) ? "met" : "**missed**"));
            }
            md.append('\n');
        }
        md.append("| memory after the build <= 40 bytes/key |");
        for (XyWorkload w : o.workloads()) {
            final double perKey = bytesPerKey(filter(results, r -> r.workload().equals(w.label())), label, 0);
            md.append(Double.isNaN(perKey) ? " |" : String.format(Locale.ROOT, " %.1f B/key %s |", perKey,
                    perKey <= 40 ? "met" : "**missed**"));
        }
        // the target is the uniform workload's; the skewed ones leave most of their nodes full
        md.append("\n| restructure after the X90Y90 rounds recovers >= 40% of the nodes |");
        for (XyWorkload w : o.workloads()) {
            final Bench.RestructureResult r = restructures.stream().filter(x -> x.label().equals(label)
                    && x.workload().equals(w.label())).findFirst().orElse(null);
            if (r == null || r.nodesBefore() == 0) {
                md.append(" |");
            } else {
                final double pct = 100.0 * r.recovered() / r.nodesBefore();
                final String verdict = w.x() != 90 || w.y() != 90 ? "(no target)" : pct >= 40 ? "met" : "**missed**";
                md.append(String.format(Locale.ROOT, " %.1f%% %s |", pct, verdict));
            }
        }
        md.append('\n');
    }

    private static void appendMemoryRow(StringBuilder md, List<Bench.Result> rows, List<String> labels,
                                        List<String[]> ratios, String title, int round) {
        md.append("| ").append(title).append(" |");
        for (String l : labels) {
            md.append(String.format(Locale.ROOT, " %.1f |", bytesPerKey(rows, l, round)));
        }
        for (String[] r : ratios) {
            md.append(String.format(Locale.ROOT, " %.2fx |", bytesPerKey(rows, r[1], round)
                    / bytesPerKey(rows, r[0], round)));
        }
        md.append('\n');
    }

    private static double bytesPerKey(List<Bench.Result> rows, String label, int round) {
        return rows.stream().filter(r -> r.label().equals(label) && r.operation().equals("memory")
                        && r.round() == round)
                .mapToDouble(r -> r.indexSize() == 0 ? Double.NaN : (double) r.bytes() / r.indexSize())
                .findFirst().orElse(Double.NaN);
    }

    private static double medianMs(List<Bench.Result> rows, String label, String op) {
        final double[] ms = rows.stream().filter(r -> r.label().equals(label) && r.operation().equals(op))
                .mapToDouble(Bench.Result::ms).toArray();
        return ms.length == 0 ? Double.NaN : median(ms);
    }

    static double median(double[] values) {
        final double[] v = values.clone();
        java.util.Arrays.sort(v);
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    static List<Bench.Result> filter(List<Bench.Result> rows, Predicate<Bench.Result> p) {
        return rows.stream().filter(p).toList();
    }
}
