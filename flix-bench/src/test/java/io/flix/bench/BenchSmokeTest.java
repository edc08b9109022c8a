package io.flix.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The benchmark's quick run: it completes, verifies its own results and writes what it promises. */
class BenchSmokeTest {

    @Test
    void quickCpuRunWritesEveryStructureAndOperation(@TempDir Path out) throws Exception {
        Bench.main(new String[] {"--backend", "cpu", "--out", out.toString(), "--quick"});

        final List<String> csv = Files.readAllLines(out.resolve("results.csv"));
        assertEquals(Bench.CSV_HEADER, csv.get(0));
        // 3 structures x 5 operations x 1 round
        assertEquals(1 + 15, csv.size(), String.join("\n", csv));
        for (String structure : List.of("flix,cpu", "TreeMap,cpu", "ConcurrentSkipListMap,cpu")) {
            for (String op : List.of("build", "get_sorted", "get_unsorted", "upsert", "delete")) {
                assertTrue(csv.stream().anyMatch(r -> r.startsWith(structure + ",") && r.contains("," + op + ",")),
                        structure + " " + op);
            }
        }
        final String summary = Files.readString(out.resolve("summary.md"));
        assertTrue(summary.contains("flix-cpu / TreeMap-cpu"), summary);
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
        assertEquals(1 << 23, BenchOptions.parse(
                new String[] {"--backend", "cpu", "--out", "x", "--build-size", "2^23"}).buildSize());
    }
}
