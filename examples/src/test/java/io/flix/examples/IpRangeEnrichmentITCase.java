package io.flix.examples;

import io.flix.flink.Rejected;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.functions.FromElementsGeneratorFunction;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import static io.flix.examples.IpRange.MAX_ADDRESS;
import static io.flix.examples.IpRange.parseAddress;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The IP-range example's pipeline ({@link IpRangeEnrichmentJob#locate}) on two task managers of two slots each, at
 * parallelism 4, against an oracle: a TreeMap of the ranges the updates leave, its floor entry of each address, then
 * the end check. Every connection must come out once, located exactly as the oracle locates it.
 *
 * <p>The range updates (ranges, changes, withdrawals, and bad ranges that must be rejected) are all applied on both
 * task managers before any connection is looked up: {@link SharedDimensionGate} holds the connections' source back
 * until the enrichment's metrics say so. Each answer then has one correct value, whatever the interleaving of the
 * job's threads. The only waits are for events that must happen, with a safety net of {@link #SAFETY_NET}.
 */
class IpRangeEnrichmentITCase {

    private static final int PARALLELISM = 4;
    /** Only a safety net, should the job hang: every wait is for an event that must happen. */
    private static final Duration SAFETY_NET = Duration.ofMinutes(5);
    private static final TypeInformation<IpRange> RANGE_TYPE = TypeInformation.of(IpRange.class);
    private static final TypeInformation<Connection> CONNECTION_TYPE = TypeInformation.of(Connection.class);

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder()
                    .setConfiguration(SharedDimensionGate.addTo(new Configuration()))
                    .setNumberTaskManagers(2)
                    .setNumberSlotsPerTaskManager(2)
                    .build());

    /** What the job's sinks received, by sink: the test's JVM runs the job. */
    static final Map<String, ConcurrentLinkedQueue<Object>> SINKS = Map.of(
            "located", new ConcurrentLinkedQueue<>(), "rejected", new ConcurrentLinkedQueue<>());

    @Test
    void generatedRangesChangedAndWithdrawnLocateEveryConnectionAsTheOracle() throws Exception {
        final List<IpRange> ranges = IpRangeEnrichmentJob.generateRanges(2_000, 11);
        final List<IpRange> updates = new ArrayList<>(ranges);
        updates.addAll(IpRangeEnrichmentJob.generateChanges(ranges, 600, 12));
        // the lowest range withdrawn, then given back as its first address alone; bad ranges in between
        final IpRange lowest = ranges.get(0);
        updates.add(IpRange.withdrawal(lowest.first));
        updates.add(new IpRange(1000, 999, "XX", 1));
        updates.add(new IpRange(MAX_ADDRESS - 1, MAX_ADDRESS + 1, "XX", 2));
        updates.add(new IpRange(-1, 0, "XX", 3));
        updates.add(new IpRange(lowest.first, lowest.first, "SG", 64_999));

        final List<Long> addresses = new ArrayList<>(List.of(0L, 1L, MAX_ADDRESS, MAX_ADDRESS - 1,
                -1L, MAX_ADDRESS + 1, Long.MIN_VALUE, Long.MAX_VALUE));
        for (IpRange update : updates) {
            for (long around : new long[]{update.first - 1, update.first, update.first + 1,
                    update.first + (update.last - update.first) / 2, update.last - 1, update.last, update.last + 1}) {
                addresses.add(around);
            }
        }
        final SplittableRandom random = new SplittableRandom(13);
        for (int i = 0; i < 5_000; i++) {
            addresses.add(random.nextLong(MAX_ADDRESS + 1));
        }

        final Map<Long, String> expected = runAndCompare(updates, addresses);
        final List<String> expectedRejections = new ArrayList<>();
        for (String bounds : List.of("[1000, 999]", "[" + (MAX_ADDRESS - 1) + ", " + (MAX_ADDRESS + 1) + "]",
                "[-1, 0]")) {
            expectedRejections.add("update: the payload function failed: java.lang.IllegalArgumentException: "
                    + bounds + " is not a range of IPv4 addresses");
        }
        expectedRejections.sort(null);
        assertEquals(expectedRejections, rejections());
        // what the connections cover: each kind of answer, many times
        final long unknown = expected.values().stream().filter(s -> s.endsWith("unknown")).count();
        assertTrue(unknown > 1_000 && expected.size() - unknown > 1_000, unknown + " of " + expected.size());
    }

    @Test
    void rangesAtTheEndsOfTheAddressSpaceAndAddressesBeyondIt() throws Exception {
        final List<IpRange> updates = List.of(
                range("0.0.0.0", "0.0.0.0", "AA", 1),
                range("0.0.0.1", "0.0.0.255", "AB", 2),
                range("10.0.0.0", "10.255.255.255", "DE", 3),
                range("192.168.0.0", "192.168.255.255", "FR", 4),
                range("255.255.255.0", "255.255.255.254", "JP", 5),
                range("255.255.255.255", "255.255.255.255", "US", 6),
                // 10/8 withdrawn and given back as 10.0.0.0/24; 192.168/16 to another country
                IpRange.withdrawal(parseAddress("10.0.0.0")),
                range("10.0.0.0", "10.0.0.255", "NL", 7),
                range("192.168.0.0", "192.168.255.255", "KE", 8));
        final List<Long> addresses = new ArrayList<>();
        for (String dotted : List.of("0.0.0.0", "0.0.0.1", "0.0.0.255", "0.0.1.0", "9.255.255.255", "10.0.0.0",
                "10.0.0.255", "10.0.1.0", "10.255.255.255", "11.0.0.0", "192.167.255.255", "192.168.0.0",
                "192.168.255.255", "192.169.0.0", "255.255.254.255", "255.255.255.0", "255.255.255.254",
                "255.255.255.255")) {
            addresses.add(parseAddress(dotted));
        }
        addresses.addAll(List.of(-1L, MAX_ADDRESS + 1, Long.MIN_VALUE, Long.MAX_VALUE));

        final Map<Long, String> expected = runAndCompare(updates, addresses);
        assertEquals(List.of(), rejections());
        // the oracle's answers at the ends, spelled out
        assertEquals("connection 0 from 0.0.0.0 -> AA AS1 [0.0.0.0 - 0.0.0.0]", expected.get(0L));
        assertEquals("connection 3 from 0.0.1.0 -> unknown", expected.get(3L));
        assertEquals("connection 7 from 10.0.1.0 -> unknown", expected.get(7L));
        assertEquals("connection 12 from 192.168.255.255 -> KE AS8 [192.168.0.0 - 192.168.255.255]",
                expected.get(12L));
        assertEquals("connection 16 from 255.255.255.254 -> JP AS5 [255.255.255.0 - 255.255.255.254]",
                expected.get(16L));
        assertEquals("connection 17 from 255.255.255.255 -> US AS6 [255.255.255.255 - 255.255.255.255]",
                expected.get(17L));
        assertEquals("connection 19 from 4294967296 -> unknown", expected.get(19L));
    }

    private static IpRange range(String first, String last, String country, long asn) {
        return new IpRange(parseAddress(first), parseAddress(last), country, asn);
    }

    /**
     * Runs the pipeline with these range updates and a connection from each address (connection {@code i} from
     * address {@code i}), and asserts that every connection came out once, located as the oracle locates it;
     * returns the oracle's answers by connection id.
     */
    private static Map<Long, String> runAndCompare(List<IpRange> updates, List<Long> addresses) throws Exception {
        final List<Connection> connections = new ArrayList<>();
        for (long address : addresses) {
            connections.add(new Connection(connections.size(), address));
        }
        final Map<Long, String> expected = oracle(updates, connections);
        SINKS.values().forEach(ConcurrentLinkedQueue::clear);
        SharedDimensionGate.reset(IpRangeEnrichmentJob.NAME);

        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(PARALLELISM);
        final DataStream<IpRange> ranges = env.fromSource(GeneratedSource.of(
                        new FromElementsGeneratorFunction<>(RANGE_TYPE, updates.toArray(new IpRange[0])),
                        updates.size(), RANGE_TYPE)
                        .heldBackUntil(SharedDimensionGate.updatesAfterLookupsOpen(IpRangeEnrichmentJob.NAME)),
                WatermarkStrategy.noWatermarks(), "ranges").setParallelism(1);
        final DataStream<Connection> connectionStream = env.fromSource(GeneratedSource.of(
                        new FromElementsGeneratorFunction<>(CONNECTION_TYPE, connections.toArray(new Connection[0])),
                        connections.size(), CONNECTION_TYPE)
                        .heldBackUntil(SharedDimensionGate.lookupsAfterLoad(IpRangeEnrichmentJob.NAME)),
                WatermarkStrategy.noWatermarks(), "connections");
        final IpRangeEnrichmentJob.Streams streams = IpRangeEnrichmentJob.locate(ranges, connectionStream);
        streams.located().sinkTo(new Collect<>("located"));
        streams.rejected().sinkTo(new Collect<>("rejected"));

        final JobClient job = env.executeAsync("IP ranges against a TreeMap");
        SharedDimensionGate.release(job, IpRangeEnrichmentJob.NAME, PARALLELISM, validUpdates(updates),
                oracleTable(updates).size(), SAFETY_NET);
        job.getJobExecutionResult().get(SAFETY_NET.toSeconds(), TimeUnit.SECONDS);

        final Map<Long, String> actual = new HashMap<>();
        final List<String> twice = new ArrayList<>();
        for (Object record : SINKS.get("located")) {
            final Located located = (Located) record;
            if (actual.put(located.connection.id, located.toString()) != null) {
                twice.add(located.toString());
            }
        }
        final List<String> wrong = new ArrayList<>();
        expected.forEach((id, answer) -> {
            if (!answer.equals(actual.get(id))) {
                wrong.add("expected " + answer + ", got " + actual.get(id));
            }
        });
        assertEquals(List.of(), twice, "connections that came out more than once");
        assertEquals(List.of(), wrong.subList(0, Math.min(wrong.size(), 20)), wrong.size() + " wrong answers");
        assertEquals(expected.size(), actual.size());
        return expected;
    }

    /** The oracle: the ranges the valid updates leave, applied one at a time. */
    private static TreeMap<Long, IpRange> oracleTable(List<IpRange> updates) {
        final TreeMap<Long, IpRange> table = new TreeMap<>();
        for (IpRange update : updates) {
            if (update.withdrawn) {
                table.remove(update.first);
            } else if (isRange(update)) {
                table.put(update.first, update);
            }
        }
        return table;
    }

    /** Each connection's answer: the floor entry of its address, where the address is not past that range's end. */
    private static Map<Long, String> oracle(List<IpRange> updates, List<Connection> connections) {
        final TreeMap<Long, IpRange> table = oracleTable(updates);
        final Map<Long, String> answers = new HashMap<>();
        for (Connection connection : connections) {
            final Map.Entry<Long, IpRange> floor = table.floorEntry(connection.address);
            final IpRange range = floor != null && connection.address <= floor.getValue().last ? floor.getValue()
                    : null;
            answers.put(connection.id, new Located(connection, range).toString());
        }
        return answers;
    }

    private static boolean isRange(IpRange update) {
        return 0 <= update.first && update.first <= update.last && update.last <= MAX_ADDRESS;
    }

    /** The updates that reach the dimension's writers: all but the rejected ones. */
    private static long validUpdates(List<IpRange> updates) {
        return updates.stream().filter(u -> u.withdrawn || isRange(u)).count();
    }

    private static List<String> rejections() {
        final List<String> reasons = new ArrayList<>();
        for (Object record : SINKS.get("rejected")) {
            final Rejected rejected = (Rejected) record;
            reasons.add(rejected.input + ": " + rejected.reason.substring(0, rejected.reason.indexOf(" (0 <= ")));
        }
        reasons.sort(null);
        return reasons;
    }

    /** Adds every record to one of {@link #SINKS}. */
    private record Collect<T>(String sink) implements Sink<T> {
        @Override
        public SinkWriter<T> createWriter(WriterInitContext context) {
            return new SinkWriter<>() {
                @Override
                public void write(T element, Context context) {
                    SINKS.get(sink).add(element);
                }

                @Override
                public void flush(boolean endOfInput) {
                }

                @Override
                public void close() {
                }
            };
        }
    }
}
