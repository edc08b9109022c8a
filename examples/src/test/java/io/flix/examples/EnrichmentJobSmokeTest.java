package io.flix.examples;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The demo at a small size: every order comes out once, and the last line says so. */
class EnrichmentJobSmokeTest {

    @Test
    void everyOrderIsEnrichedOnceAndTheLastLineSaysSo() throws Exception {
        final PrintStream original = System.out;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final long enriched;
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            enriched = EnrichmentJob.run(20_000, 50_000, 2);
        } finally {
            System.setOut(original);
        }
        final String[] lines = captured.toString(StandardCharsets.UTF_8).trim().split("\n");
        assertEquals(50_000, enriched);
        final String last = lines[lines.length - 1];
        assertTrue(last.matches("enriched=50000 throughput=\\d+ backend=(cpu|gpu)"), last);
        assertTrue(lines.length >= 7, "five sample orders, a summary, the last line");
        assertTrue(lines[0].contains(" -> "), lines[0]);
    }
}
