package io.flix.examples;

import io.flix.flink.FlixEnrichment;
import io.flix.flink.LookupKind;
import io.flix.flink.Rejected;
import io.flix.index.Backend;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.functions.FromElementsGeneratorFunction;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * IP-range enrichment in FliX's shared mode: each connection's IPv4 address is located in a table of address ranges
 * (first address, last address, country, AS), which a stream of range updates keeps current.
 *
 * <p>The ranges are keyed by their first address (an address as a long, 0 to 2^32 - 1). A {@code FLOOR} lookup of
 * a connection's address finds the range with the largest first address at or below it; the connection lies in that
 * range where its address is at or below the range's last address, else in a gap between ranges: unknown. The
 * ranges must not overlap (as in IP-to-country and IP-to-AS tables), so that the range that starts last at or below
 * an address is the only one that may hold it. An update replaces the range that starts at the same address (a new
 * last address, country or AS); a withdrawn one deletes it; a range whose bounds are no IPv4 addresses in order is
 * rejected with the reason.
 *
 * <pre>{@code
 * FlixEnrichment<IpRange, Connection, IpRange> enrichment = FlixEnrichment.shared(ranges, connections)
 *         .key(range -> range.first, connection -> connection.address)
 *         .payload(range -> range.withdrawn ? null : range.checked(), IpRange.class)
 *         .lookup(LookupKind.FLOOR);
 * DataStream<Located> located = enrichment.build()
 *         .map(found -> new Located(found.event,
 *                 found.payload != null && found.event.address <= found.payload.last ? found.payload : null))
 *         .returns(Located.class);
 * }</pre>
 *
 * Why the shared mode: the floor must see every range. The shared mode keeps the whole table on every task manager
 * and answers the lookups where the connections come from, without a shuffle. The keyed mode
 * ({@code FlixEnrichment.of}) would answer each floor within one subtask's keys only: wrong at a parallelism
 * above 1.
 *
 * <p>The local demo ({@link #main}; arguments, all optional: {@code --ranges N} (100,000), {@code --connections N}
 * (1,000,000), {@code --parallelism N} (2)) generates the ranges (with gaps, from single addresses to large blocks),
 * then changes a tenth of them (withdrawn, given to another country and AS, or cut to their lower half), all from one
 * source subtask so that they are applied in this order, and locates generated connections. The connections wait
 * until every range update is applied on every task manager ({@link SharedDimensionGate}), so that each has one
 * answer. It prints a few located connections and, as its last line,
 * {@code connections=<count> located=<count> unknown=<count> backend=<cpu|gpu>}.
 */
public final class IpRangeEnrichmentJob {

    /** The enrichment's name: its lookups' operator; its writers' is this with ": dimension". */
    static final String NAME = "IP ranges";
    /** The demo's range updates are generated in memory and shipped with the job. */
    private static final int MAX_RANGES = 1 << 24;
    /** Only a safety net for the local demo's load, should the job hang. */
    private static final Duration SAFETY_NET = Duration.ofMinutes(10);
    private static final String[] COUNTRIES = {"BR", "DE", "FR", "IN", "JP", "KE", "NG", "NL", "US", "ZA"};

    private static final LongAdder LOCATED = new LongAdder();
    private static final LongAdder UNKNOWN = new LongAdder();
    private static final AtomicInteger PRINTED = new AtomicInteger();

    private IpRangeEnrichmentJob() {
    }

    /** What {@link #locate} adds to a job: the located connections, and the range updates it rejected. */
    public record Streams(DataStream<Located> located, DataStream<Rejected> rejected) {
    }

    /** Locates each connection in the ranges: the enrichment and the check of the found range's end. */
    public static Streams locate(DataStream<IpRange> ranges, DataStream<Connection> connections) {
        final FlixEnrichment<IpRange, Connection, IpRange> enrichment = FlixEnrichment.shared(ranges, connections)
                .key(range -> range.first, connection -> connection.address)
                .payload(range -> range.withdrawn ? null : range.checked(), IpRange.class)
                .lookup(LookupKind.FLOOR)
                .name(NAME)
                .uid("ip-ranges");
        final DataStream<Located> located = enrichment.build()
                // the range found starts at or below the address: the address lies in it unless it is past its end
                .map(found -> new Located(found.event,
                        found.payload != null && found.event.address <= found.payload.last ? found.payload : null))
                .returns(Located.class)
                .name("check the range's end");
        return new Streams(located, enrichment.rejected());
    }

    public static void main(String[] args) throws Exception {
        final Args options = Args.of(args);
        final long ranges = options.number("--ranges", 100_000);
        final long connections = options.number("--connections", 1_000_000);
        final long parallelism = options.number("--parallelism", 2);
        if (ranges < 1 || ranges > MAX_RANGES || connections < 0 || parallelism < 1 || parallelism > 1024) {
            throw new IllegalArgumentException("--ranges must be 1 to " + MAX_RANGES + ", --connections >= 0 and "
                    + "--parallelism 1 to 1024; were " + ranges + ", " + connections + " and " + parallelism);
        }
        run((int) ranges, connections, (int) parallelism);
    }

    /** How many connections came out of a run, and how many of them were located. */
    record Summary(long connections, long located, long unknown) {
    }

    /** Runs the local demo and prints its lines. */
    static Summary run(int rangeCount, long connectionCount, int parallelism) throws Exception {
        final List<IpRange> updates = updates(rangeCount);
        LOCATED.reset();
        UNKNOWN.reset();
        PRINTED.set(0);
        SharedDimensionGate.reset(NAME);

        final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(
                SharedDimensionGate.addTo(new Configuration()));
        env.setParallelism(parallelism);
        final TypeInformation<IpRange> rangeType = TypeInformation.of(IpRange.class);
        // the range updates in order: one source subtask
        final DataStream<IpRange> ranges = env.fromSource(GeneratedSource.of(
                        new FromElementsGeneratorFunction<>(rangeType, updates.toArray(new IpRange[0])),
                        updates.size(), rangeType).heldBackUntil(SharedDimensionGate.updatesAfterLookupsOpen(NAME)),
                WatermarkStrategy.noWatermarks(), "ranges").setParallelism(1);
        final DataStream<Connection> connections = env.fromSource(GeneratedSource.of(
                        i -> new Connection(i, connectionAddress(i)), connectionCount,
                        TypeInformation.of(Connection.class)).heldBackUntil(SharedDimensionGate.lookupsAfterLoad(NAME)),
                WatermarkStrategy.noWatermarks(), "connections");
        final Streams streams = locate(ranges, connections);
        streams.located().sinkTo(new CountingSink()).name("count");
        streams.rejected().print("rejected");

        final JobClient job = env.executeAsync("FliX IP-range enrichment");
        SharedDimensionGate.release(job, NAME, parallelism, updates.size(), rangesLeft(updates), SAFETY_NET);
        job.getJobExecutionResult().get();
        final Summary summary = new Summary(LOCATED.sum() + UNKNOWN.sum(), LOCATED.sum(), UNKNOWN.sum());
        System.out.printf(Locale.ROOT, "connections=%d located=%d unknown=%d backend=%s%n", summary.connections(),
                summary.located(), summary.unknown(), EnrichmentJob.backendName(Backend.AUTO));
        return summary;
    }

    /** The demo's range updates: up to {@code count} generated ranges, then a tenth as many changes of them. */
    static List<IpRange> updates(int count) {
        final List<IpRange> updates = new ArrayList<>(generateRanges(count, 1));
        updates.addAll(generateChanges(updates, count / 10, 2));
        return updates;
    }

    /**
     * Up to {@code count} ranges in address order, none overlapping, over most of the address space: a quarter single
     * addresses, a quarter CIDR blocks, the others of any width up to 2.5 times the space per range; a third of them
     * meet the next one, the others leave a gap. The first starts above {@code 0.0.0.0} and the last ends below
     * {@code 255.255.255.255}.
     */
    static List<IpRange> generateRanges(int count, long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        // a range and its gap take about 0.36 spacing on average: the ranges fill about nine tenths of the space
        final long spacing = Math.max(4, (IpRange.MAX_ADDRESS + 1) / count * 5 / 2);
        final List<IpRange> ranges = new ArrayList<>(count);
        long next = 1 + random.nextLong(spacing);
        while (ranges.size() < count) {
            long first = next;
            final long width = switch (random.nextInt(4)) {
                case 0 -> 1;
                case 1 -> {
                    final long block = 1L << random.nextInt(64 - Long.numberOfLeadingZeros(spacing));
                    first = (next + block - 1) & -block;
                    yield block;
                }
                default -> 1 + random.nextLong(spacing);
            };
            if (first + width - 1 >= IpRange.MAX_ADDRESS) {
                break;
            }
            ranges.add(new IpRange(first, first + width - 1, country(random), asn(random)));
            next = first + width + (random.nextInt(3) == 0 ? 0 : 1 + random.nextLong(spacing / 4));
        }
        return ranges;
    }

    /**
     * {@code count} updates of ranges picked from {@code ranges}: in turn, one withdrawn, one given to another
     * country and AS, and one cut to its lower half (its upper half becomes a gap).
     */
    static List<IpRange> generateChanges(List<IpRange> ranges, int count, long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        final List<IpRange> changes = new ArrayList<>(count);
        for (int i = 0; i < count && !ranges.isEmpty(); i++) {
            final IpRange range = ranges.get(random.nextInt(ranges.size()));
            changes.add(switch (i % 3) {
                case 0 -> IpRange.withdrawal(range.first);
                case 1 -> new IpRange(range.first, range.last, country(random), asn(random));
                default -> new IpRange(range.first, range.first + (range.last - range.first) / 2, range.country,
                        range.asn);
            });
        }
        return changes;
    }

    /** The demo's connection {@code i} comes from this address: spread over the whole IPv4 space. */
    static long connectionAddress(long i) {
        return (i * 0x9E3779B97F4A7C15L) >>> 32;
    }

    /** How many ranges the updates leave. */
    private static long rangesLeft(List<IpRange> updates) {
        final Set<Long> firsts = new HashSet<>();
        for (IpRange update : updates) {
            if (update.withdrawn) {
                firsts.remove(update.first);
            } else {
                firsts.add(update.first);
            }
        }
        return firsts.size();
    }

    private static String country(SplittableRandom random) {
        return COUNTRIES[random.nextInt(COUNTRIES.length)];
    }

    private static long asn(SplittableRandom random) {
        return 64_512 + random.nextInt(1_000);
    }

    /** Counts the located and the unknown connections and prints the first few. */
    private static final class CountingSink implements Sink<Located> {
        @Override
        public SinkWriter<Located> createWriter(WriterInitContext context) {
            return new SinkWriter<>() {
                @Override
                public void write(Located located, Context context) {
                    (located.range == null ? UNKNOWN : LOCATED).increment();
                    if (PRINTED.get() < 5 && PRINTED.getAndIncrement() < 5) {
                        System.out.println(located);
                    }
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
