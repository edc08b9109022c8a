package io.flix.examples;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The SQL example at a small size: every order comes out once, most find their product, the last line says so. */
class SqlLookupJoinExampleSmokeTest {

    @Test
    void everyOrderIsJoinedOnceAndTheLastLineSaysSo() throws Exception {
        final PrintStream original = System.out;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final long joined;
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            joined = SqlLookupJoinExample.run(9_000, 20_000, 2);
        } finally {
            System.setOut(original);
        }
        final String[] lines = captured.toString(StandardCharsets.UTF_8).trim().split("\n");
        assertEquals(20_000, joined);
        final String last = lines[lines.length - 1];
        final java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("joined=20000 matched=(\\d+) throughput=\\d+ seconds=[\\d.]+")
                        .matcher(last);
        assertTrue(m.matches(), last);
        // product ids are drawn from 1..10000, of which 1..9000 exist: about 90% match
        final long matched = Long.parseLong(m.group(1));
        assertTrue(matched > 17_000 && matched < 19_000, "matched " + matched);
        assertTrue(lines.length >= 6 && lines[0].startsWith("order "), lines[0]);
    }
}
