package io.flix.examples;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The IP-range demo at a small size: every connection comes out once, located as a TreeMap of the ranges says. */
class IpRangeEnrichmentJobSmokeTest {

    @Test
    void everyConnectionComesOutOnceLocatedAsATreeMapSays() throws Exception {
        final int ranges = 2_000;
        final long connections = 20_000;
        final TreeMap<Long, IpRange> table = new TreeMap<>();
        for (IpRange update : IpRangeEnrichmentJob.updates(ranges)) {
            if (update.withdrawn) {
                table.remove(update.first);
            } else {
                table.put(update.first, update);
            }
        }
        long located = 0;
        for (long i = 0; i < connections; i++) {
            final long address = IpRangeEnrichmentJob.connectionAddress(i);
            final Map.Entry<Long, IpRange> floor = table.floorEntry(address);
            located += floor != null && address <= floor.getValue().last ? 1 : 0;
        }

        final PrintStream original = System.out;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final IpRangeEnrichmentJob.Summary summary;
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            summary = IpRangeEnrichmentJob.run(ranges, connections, 2);
        } finally {
            System.setOut(original);
        }
        assertEquals(new IpRangeEnrichmentJob.Summary(connections, located, connections - located), summary);
        final String[] lines = captured.toString(StandardCharsets.UTF_8).trim().split("\n");
        final String last = lines[lines.length - 1];
        assertTrue(last.matches("connections=20000 located=" + located + " unknown=" + (connections - located)
                + " backend=(cpu|gpu)"), last);
        assertEquals(6, lines.length, "five located connections, then the last line");
        assertTrue(lines[0].matches("connection \\d+ from \\d+\\.\\d+\\.\\d+\\.\\d+ -> .+"), lines[0]);
    }
}
