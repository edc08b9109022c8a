package io.flix.examples;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The SQL IP-range example at a small size: every connection comes out once, located as a TreeMap of the ranges
 * says (its floor entry, then the end check), and the printed rows are the TreeMap's answers.
 */
class SqlIpRangeEnrichmentExampleSmokeTest {

    @Test
    void everyConnectionComesOutOnceLocatedAsATreeMapSays() throws Exception {
        final int ranges = 2_000;
        final long connections = 20_000;
        final TreeMap<Long, IpRange> table = new TreeMap<>();
        for (IpRange range : IpRangeEnrichmentJob.generateRanges(ranges, 1)) {
            table.put(range.first, range);
        }
        long located = 0;
        for (long i = 0; i < connections; i++) {
            located += locate(table, i) != null ? 1 : 0;
        }

        final PrintStream original = System.out;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final IpRangeEnrichmentJob.Summary summary;
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            summary = SqlIpRangeEnrichmentExample.run(ranges, connections, 2);
        } finally {
            System.setOut(original);
        }
        assertEquals(new IpRangeEnrichmentJob.Summary(connections, located, connections - located), summary);
        assertTrue(located > connections / 2 && located < connections, "located " + located);
        final String[] lines = captured.toString(StandardCharsets.UTF_8).trim().split("\n");
        final String last = lines[lines.length - 1];
        assertTrue(last.matches("connections=20000 located=" + located + " unknown=" + (connections - located)
                + " throughput=\\d+ seconds=[\\d.]+"), last);
        assertEquals(6, lines.length, "five located connections, then the last line");
        final Pattern printed = Pattern.compile("connection (\\d+) from .+");
        for (int i = 0; i < 5; i++) {
            final Matcher m = printed.matcher(lines[i]);
            assertTrue(m.matches(), lines[i]);
            final long id = Long.parseLong(m.group(1));
            final Connection connection = new Connection(id, IpRangeEnrichmentJob.connectionAddress(id));
            assertEquals(new Located(connection, locate(table, id)).toString(), lines[i]);
        }
    }

    /** The range connection {@code i}'s address lies in, or null. */
    private static IpRange locate(TreeMap<Long, IpRange> table, long i) {
        final long address = IpRangeEnrichmentJob.connectionAddress(i);
        final Map.Entry<Long, IpRange> floor = table.floorEntry(address);
        return floor != null && address <= floor.getValue().last ? floor.getValue() : null;
    }
}
