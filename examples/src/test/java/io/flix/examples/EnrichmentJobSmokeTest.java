package io.flix.examples;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.BitSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The demo at a small size: every order comes out once, and the last line says so. */
class EnrichmentJobSmokeTest {

    private static final long PRODUCTS = 20_000;
    private static final long ORDERS = 50_000;

    @ParameterizedTest(name = "shared={0}")
    @ValueSource(booleans = {true, false})
    void everyOrderIsEnrichedOnceAndTheLastLineSaysSo(boolean shared) throws Exception {
        final PrintStream original = System.out;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final EnrichmentJob.Summary summary;
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            summary = EnrichmentJob.run(PRODUCTS, ORDERS, 2, shared);
        } finally {
            System.setOut(original);
        }
        final String[] lines = captured.toString(StandardCharsets.UTF_8).trim().split("\n");
        assertEquals(ORDERS, summary.enriched());
        final String last = lines[lines.length - 1];
        assertTrue(last.matches("enriched=50000 throughput=\\d+ backend=(cpu|gpu)"), last);
        assertTrue(lines.length >= 7, "five sample orders, a summary, the last line");
        assertTrue(lines[0].contains(" -> "), lines[0]);
        if (shared) {
            // the orders wait for every change: each finds exactly the products listed at the end
            assertEquals(ordersOfListedProducts(), summary.matched());
        }
    }

    private static long ordersOfListedProducts() {
        final BitSet listed = EnrichmentJob.listedAtTheEnd(PRODUCTS);
        long matched = 0;
        for (long i = 0; i < ORDERS; i++) {
            final long ordinal = EnrichmentJob.orderedOrdinal(i, PRODUCTS);
            if (ordinal < PRODUCTS && listed.get((int) ordinal)) {
                matched++;
            }
        }
        return matched;
    }
}
