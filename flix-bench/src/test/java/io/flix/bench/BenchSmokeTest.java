package io.flix.bench;

import io.flix.index.gpu.GpuSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The benchmark's quick run: it completes, verifies its own results and writes what it promises. */
class BenchSmokeTest {

    private static final List<String> CPU_STRUCTURES =
            List.of("flix,cpu", "TreeMap,cpu", "ConcurrentSkipListMap,cpu", "Long2LongOpenHashMap,cpu");
    private static final List<String> WORKLOADS = List.of("X90Y90", "X25Y90", "X6Y90", "X3Y90");

    @Test
    void quickCpuRunWritesEveryStructureOperationSummaryAndPlot(@TempDir Path out) throws Exception {
        Bench.main(new String[] {"--backend", "cpu", "--out", out.toString(), "--quick"});

        final List<String> csv = Files.readAllLines(out.resolve("results.csv"));
        assertEquals(Bench.CSV_HEADER, csv.get(0));
        for (String workload : WORKLOADS) {
            for (String structure : CPU_STRUCTURES) {
                final boolean ordered = !structure.startsWith("Long2Long");
                for (String op : List.of("build", "insert", "delete", "memory", "get_hit_sorted", "get_hit_unsorted",
                        "get_miss_sorted", "get_miss_unsorted", "ceiling", "range")) {
                    final boolean expected = ordered || !Bench.ORDERED_ONLY.contains(op);
                    assertEquals(expected, rows(csv, structure, op + "@" + workload).size() > 0,
                            structure + " " + op + " " + workload);
                }
                // lookups after the build and after 4 insert and 4 delete rounds
                assertEquals(9, rows(csv, structure, "get_hit_sorted@" + workload).size(), structure);
                assertEquals(4, rows(csv, structure, "insert@" + workload).size(), structure);
                assertEquals(4, rows(csv, structure, "delete@" + workload).size(), structure);
            }
            assertEquals(1, rows(csv, "flix,cpu", "restructure@" + workload).size(), workload);
            assertTrue(rows(csv, "TreeMap,cpu", "restructure@" + workload).isEmpty(), workload);
        }
        for (String row : csv.subList(1, csv.size())) {
            assertEquals(11, fields(row).size(), row);
        }

        final String summary = Files.readString(out.resolve("summary.md"));
        for (String workload : WORKLOADS) {
            assertTrue(summary.contains("## Workload " + workload), summary);
        }
        assertTrue(summary.contains("TreeMap-cpu / flix-cpu"), summary);
        assertTrue(summary.contains("Long2LongOpenHashMap-cpu / flix-cpu"), summary);
        assertTrue(summary.contains("## Restructure"), summary);
        // a runtime without fonts draws no plots: the summary says why, the rest of the run stands
        final boolean drawn = !summary.contains("plots not drawn here");
        if (!drawn) {
            assertTrue(summary.contains("--plot-only"), summary);
        }
        for (String plot : !drawn ? List.<String>of() : List.of("insert-time.png", "delete-time.png",
                "lookup-time-sorted.png", "lookup-time-unsorted.png", "memory.png", "throughput-per-byte.png")) {
            final Path file = out.resolve(plot);
            assertTrue(Files.size(file) > 1000, plot);
            final byte[] head = Files.readAllBytes(file);
            assertEquals((byte) 0x89, head[0], plot); // PNG signature
            assertEquals('P', head[1], plot);
            assertTrue(summary.contains("](" + plot + ")"), plot);
        }

        // the bus sweep and the latency table, on the CPU backend without a bus bound
        final List<String> bus = Files.readAllLines(out.resolve("bus.csv"));
        assertEquals(BusBench.CSV_HEADER, bus.get(0));
        for (int size : new int[] {1 << 10, 1 << 12}) {
            for (String op : BusBench.BUS_OPERATIONS) {
                final int keys = op.equals("range") ? size / BusBench.RANGE_KEYS : size;
                assertEquals(1, busRows(bus, "bus", op, keys).size(), op + " " + size);
            }
        }
        for (int size : new int[] {1 << 8, 1 << 10}) {
            for (String op : BusBench.LATENCY_OPERATIONS) {
                assertEquals(1, busRows(bus, "latency", op, size).size(), op + " " + size);
            }
        }
        for (String row : bus.subList(1, bus.size())) {
            final List<String> f = fields(row);
            assertEquals(12, f.size(), row);
            assertEquals("flix-cpu", f.get(0), row);
            assertTrue(Double.parseDouble(f.get(7)) > 0, row);
            assertEquals("", f.get(11), "no bus bound without a GPU: " + row);
        }
        assertTrue(summary.contains("## End to end by size: flix-cpu"), summary);
        assertTrue(summary.contains("## Micro-batch latency: flix-cpu"), summary);
        assertTrue(summary.contains("| engine_get_index_sort |"), summary);
        assertFalse(summary.contains("## The bus, measured"), "no bus without a GPU");

        // --plot-only draws the same plots again from results.csv alone
        for (String row : csv.subList(1, csv.size())) {
            final List<String> reread = fields(Bench.Result.parse(row).csv());
            final List<String> written = fields(row);
            reread.remove(9); // ops_per_sec: derived from the rounded ms
            written.remove(9);
            assertEquals(written, reread, row);
        }
        if (!drawn) {
            return; // --plot-only needs fonts too
        }
        final List<Path> plots = List.of(out.resolve("memory.png"), out.resolve("insert-time.png"));
        for (Path plot : plots) {
            Files.delete(plot);
        }
        Bench.main(new String[] {"--backend", "cpu", "--out", out.toString(), "--quick", "--plot-only"});
        for (Path plot : plots) {
            assertTrue(Files.size(plot) > 1000, plot.toString());
        }
        assertEquals(csv, Files.readAllLines(out.resolve("results.csv")), "--plot-only leaves results.csv as it was");
    }

    /**
     * Plotting fails as on a Java runtime without fonts (simulated: the plotter throws what such a runtime throws):
     * the run still writes results.csv and the summary, and the summary says why the plots are missing.
     */
    @Test
    void aRunWhosePlotsCannotBeDrawnStillWritesItsCsvAndSummaryAndSaysWhy(@TempDir Path out) throws Exception {
        final BenchOptions options = BenchOptions.parse(new String[] {"--backend", "cpu", "--out", out.toString(),
                "--quick", "--workload", "90/90", "--rounds", "1"});
        Bench.run(options, (dir, o, results) -> {
            throw new InternalError("simulated: Fontconfig head is null, check your fonts or fonts configuration");
        });
        final List<String> csv = Files.readAllLines(out.resolve("results.csv"));
        assertEquals(Bench.CSV_HEADER, csv.get(0));
        assertTrue(csv.size() > 1, "rows written");
        final String summary = Files.readString(out.resolve("summary.md"));
        assertTrue(summary.contains("## Workload X90Y90"), summary);
        assertTrue(summary.contains("plots not drawn here") && summary.contains("Fontconfig head is null")
                && summary.contains("--plot-only"), summary);
        try (var files = Files.list(out)) {
            assertTrue(files.noneMatch(f -> f.toString().endsWith(".png")), "no plot files");
        }
    }

    /** A small batch's bus bound is nanoseconds: written with digits enough to stay above zero. */
    @Test
    void aSmallBatchsBusBoundIsWrittenAboveZero() {
        final BusBench.Row row = new BusBench.Row("flix-gpu", "gpu", "H200", "latency", "get_sorted", 256, 100,
                0.05, 2_048, 2_048, 2_048 / 55e9 * 1e3);
        final String bound = fields(row.csv()).get(11);
        assertTrue(Double.parseDouble(bound) > 0, bound);
        assertEquals(2_048 / 55e9 * 1e3, Double.parseDouble(bound), 2_048 / 55e9 * 1e3 * 1e-3, bound);
        assertEquals("", fields(new BusBench.Row("flix-cpu", "cpu", "x", "bus", "build", 1, 1, 1.0, 8, 0,
                Double.NaN).csv()).get(11), "no bound without a GPU");
    }

    /** bus.csv rows of one section, operation and key count. */
    private static List<String> busRows(List<String> csv, String section, String operation, int keys) {
        return csv.stream().filter(r -> {
            final List<String> f = fields(r);
            return f.get(3).equals(section) && f.get(4).equals(operation) && f.get(5).equals(Integer.toString(keys));
        }).toList();
    }

    @Test
    void sectionsRunAlone(@TempDir Path out) throws Exception {
        Bench.main(new String[] {"--backend", "cpu", "--out", out.toString(), "--quick", "--sections", "latency",
            "--latency-sizes", "2^6,100"});
        assertFalse(Files.exists(out.resolve("results.csv")), "no paper section, no results.csv");
        final List<String> bus = Files.readAllLines(out.resolve("bus.csv"));
        assertEquals(1 + 2 * BusBench.LATENCY_OPERATIONS.size(), bus.size(), String.join("\n", bus));
        assertEquals(1, busRows(bus, "latency", "upsert_unsorted", 100).size());
        final String summary = Files.readString(out.resolve("summary.md"));
        assertTrue(summary.contains("## Micro-batch latency: flix-cpu"), summary);
        assertFalse(summary.contains("## Workload"), summary);
        assertFalse(summary.contains("## End to end by size"), summary);
        assertThrows(IllegalArgumentException.class, () -> BenchOptions.parse(new String[] {"--backend", "cpu",
            "--out", out.toString(), "--sections", "paper,nothing"}));
    }

    /** Rows of one structure ("name,backend") and operation column. */
    private static List<String> rows(List<String> csv, String structure, String operation) {
        return csv.stream().filter(r -> r.startsWith(structure + ",") && fields(r).get(3).equals(operation)).toList();
    }

    private static List<String> fields(String row) {
        return Bench.csvFields(row);
    }

    @Test
    void gpuBackendRunsOrSaysWhyNot(@TempDir Path out) throws Exception {
        final BenchOptions options = BenchOptions.parse(new String[] {"--backend", "gpu", "--out", out.toString(),
                "--quick", "--workload", "90/90", "--rounds", "1"});
        final String reason = Bench.shortReason(GpuSupport.unavailableReason());
        if (reason == null) {
            Bench.run(options);
            final List<String> csv = Files.readAllLines(out.resolve("results.csv"));
            for (String structure : List.of("flix,gpu", "flix,gpu-resident", "sortedarray,gpu",
                    "sortedarray,gpu-resident")) {
                for (String op : List.of("build", "insert", "delete", "get_hit_sorted", "get_hit_unsorted",
                        "get_miss_sorted", "get_miss_unsorted", "ceiling", "range")) {
                    assertEquals(op.equals("build") || op.endsWith("sert") || op.equals("delete") ? 1 : 3,
                            rows(csv, structure, op + "@X90Y90").size(), structure + " " + op);
                }
            }
            assertEquals(3, rows(csv, "flix,gpu-resident", "sort_pairs@X90Y90").size());
            assertEquals(1, rows(csv, "flix,gpu-resident", "restructure@X90Y90").size());
            assertTrue(rows(csv, "sortedarray,gpu", "restructure@X90Y90").isEmpty());
            final String summary = Files.readString(out.resolve("summary.md"));
            assertTrue(summary.contains("sortedarray-gpu / flix-gpu"), summary);
            assertTrue(summary.contains("sortedarray-gpu-resident / flix-gpu-resident"), summary);
            assertFalse(summary.contains("sortedarray-gpu / flix-gpu-resident"), summary);
            assertTrue(summary.contains("## GPU targets"), summary);
            assertTrue(summary.contains("## The bus, measured in this run"), summary);
            assertTrue(summary.contains("| get_sorted bus bound |"), summary);
            final List<String> bus = Files.readAllLines(out.resolve("bus.csv"));
            for (String op : BusBench.BUS_OPERATIONS) {
                assertEquals(2, busRows(bus, "bus", op, op.equals("range") ? 1 << 6 : 1 << 10).size()
                        + busRows(bus, "bus", op, op.equals("range") ? 1 << 8 : 1 << 12).size(), op);
            }
            for (String row : bus.subList(1, bus.size())) {
                assertEquals("flix-gpu", fields(row).get(0), row);
                assertTrue(Double.parseDouble(fields(row).get(11)) > 0, "a bus bound: " + row);
            }
        } else {
            final Exception e = assertThrows(Bench.GpuUnavailableException.class, () -> Bench.run(options));
            assertTrue(e.getMessage().contains(reason), e.getMessage());
            assertFalse(e.getMessage().contains("\n"), e.getMessage());
            assertFalse(Files.exists(out.resolve("results.csv")));
        }
    }

    @Test
    void theShardLoadRunLoadsBothContestantsAlikeInEitherOrder() {
        for (boolean ascending : new boolean[] {false, true}) {
            final ShardLoadBench.Result one = ShardLoadBench.run(1 << 15, 1 << 12, 2, 1, ascending, 7);
            final ShardLoadBench.Result sharded = ShardLoadBench.run(1 << 15, 1 << 12, 2, 2, ascending, 7);
            assertEquals(one.size(), sharded.size());
            assertEquals(one.valueSum(), sharded.valueSum());
            assertEquals(one.orderedSum(), sharded.orderedSum());
            assertTrue(one.loadPerSecond() > 0 && sharded.getPerSecond() > 0 && sharded.rangePerSecond() > 0);
        }
        ShardLoadBench.main(new String[] {"--keys", "2^14", "--batch", "2^11", "--threads", "2", "--shards", "2,8"});
        final IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ShardLoadBench.main(new String[] {"--order", "sideways"}));
        assertTrue(e.getMessage().contains("--order"), e.getMessage());
    }

    @Test
    void optionsNameTheirProblem() {
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> BenchOptions.parse(new String[] {"--backend", "tpu", "--out", "x"})).getMessage()
                .contains("--backend"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> BenchOptions.parse(new String[] {"--backend", "cpu"})).getMessage().contains("--out"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> BenchOptions.parse(new String[] {"--backend", "cpu", "--out", "x", "--build-size", "2^x"}))
                .getMessage().contains("--build-size"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> BenchOptions.parse(new String[] {"--backend", "cpu", "--out", "x", "--workload", "0/90"}))
                .getMessage().contains("--workload"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> BenchOptions.parse(new String[] {"--backend", "cpu", "--out", "x", "--distribution", "zipf"}))
                .getMessage().contains("--distribution"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> BenchOptions.parse(new String[] {"--backend", "cpu", "--out", "x", "--structures", "btree"}))
                .getMessage().contains("--structures"));
        final BenchOptions o = BenchOptions.parse(new String[] {"--backend", "cpu", "--out", "x", "--build-size",
                "2^23", "--workload", "25/90,3/90", "--distribution", "dense"});
        assertEquals(1 << 23, o.buildSize());
        assertEquals(List.of(new BenchOptions.XyWorkload(25, 90), new BenchOptions.XyWorkload(3, 90)), o.workloads());
        assertEquals(BenchOptions.KeyDistribution.DENSE, o.distribution());
        assertEquals(1 << 25, BenchOptions.parse(new String[] {"--backend", "gpu", "--out", "x"}).buildSize());
        assertEquals("both", BenchOptions.parse(new String[] {"--backend", "gpu", "--out", "x"}).gpuTiming());
        assertEquals("resident", BenchOptions.parse(new String[] {"--backend", "gpu", "--out", "x", "--gpu-timing",
                "resident"}).gpuTiming());
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> BenchOptions.parse(new String[] {"--backend", "gpu", "--out", "x", "--gpu-timing", "fast"}))
                .getMessage().contains("--gpu-timing"));
        assertEquals(List.of("sortedarray"), BenchOptions.parse(new String[] {"--backend", "gpu", "--out", "x",
                "--structures", "sortedarray"}).structures());
    }

    @Test
    void absentCeilingIndexesAgreeWithOneBinarySearchEach() {
        final java.util.SplittableRandom rnd = new java.util.SplittableRandom(9);
        for (int size : new int[] {0, 1, 1000, 100_000}) {
            final long[] all = rnd.longs(size + 50_000L, -1_000_000, 1_000_000).distinct().toArray();
            final long[] present = java.util.Arrays.stream(all, 0, Math.min(size, all.length)).sorted().toArray();
            final long[] absent = java.util.Arrays.stream(all, present.length, all.length).sorted().toArray();
            final WorkloadKeys.State state = new WorkloadKeys.State(present, absent);
            final int[] merged = state.absentCeilingIndexes();
            assertEquals(absent.length, merged.length);
            for (int j = 0; j < absent.length; j++) {
                assertEquals(state.ceilingIndex(absent[j]), merged[j], "size " + size + " absent key " + absent[j]);
            }
        }
        final WorkloadKeys.State keys = WorkloadKeys.generate(new BenchOptions.XyWorkload(25, 90),
                BenchOptions.KeyDistribution.UNIFORM, 1 << 12, 1 << 10, 2, 3).state(1, 0);
        for (int i = 1; i < keys.absent().length; i++) {
            assertTrue(keys.absent()[i - 1] < keys.absent()[i], "absent keys sorted and distinct");
        }
    }

    @Test
    void workloadKeysAreDistinctAndHotSegmentsGetTheirShare() {
        for (BenchOptions.KeyDistribution distribution : BenchOptions.KeyDistribution.values()) {
            final WorkloadKeys keys = WorkloadKeys.generate(new BenchOptions.XyWorkload(6, 90), distribution,
                    1 << 12, 1 << 12, 2, 7);
            final WorkloadKeys.State state = keys.state(2, 0);
            assertEquals((1 << 12) * 3, state.present().length);
            assertEquals(1 << 12, state.absent().length); // the never-inserted pool
            for (int i = 1; i < state.present().length; i++) {
                assertTrue(state.present()[i - 1] < state.present()[i], "distinct and sorted");
            }
            // the 6% hot segments: the segments that the batch keys fill most
            final long[] batch = keys.batch(1);
            final int[] perSegment = new int[WorkloadKeys.SEGMENTS];
            final long min = distribution == BenchOptions.KeyDistribution.UNIFORM ? Long.MIN_VALUE : 0;
            final double width = distribution == BenchOptions.KeyDistribution.UNIFORM ? Math.pow(2, 64) / 1024
                    : Math.ceil(Math.ceil(2.0 * (1 << 12) * 4 * 15) / 1024);
            for (long k : batch) {
                perSegment[(int) (((double) k - min) / width)]++;
            }
            final int[] sorted = java.util.Arrays.stream(perSegment).sorted().toArray();
            int inTop = 0;
            for (int i = 0; i < Math.round(1024 * 0.06); i++) {
                inTop += sorted[sorted.length - 1 - i];
            }
            final double share = inTop / (double) batch.length;
            assertTrue(share > 0.85 && share < 0.95, distribution + " hot share " + share);
        }
    }
}
