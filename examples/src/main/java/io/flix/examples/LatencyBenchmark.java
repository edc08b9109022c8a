package io.flix.examples;

import io.flix.examples.EnrichmentBenchmark.Contestant;
import io.flix.examples.EnrichmentBenchmark.Setup;
import io.flix.index.Backend;

import org.HdrHistogram.Histogram;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * How long an order waits: event-to-output latency of the enrichment job at offered rates, beside
 * {@link EnrichmentBenchmark}'s throughput, with the same contestants' jobs ({@link EnrichmentBenchmark#enrich}): a
 * product dimension of {@code --keys} keys (payload: the price) is loaded once per job, then orders arrive at fixed
 * rates, phase after phase, and the sink records each order's latency.
 *
 * <ul>
 *   <li>Contestants ({@code --variants}, default {@code flix-shared,flix-keyed,heap,rocksdb,ceiling-chained}, the
 *       names of {@link EnrichmentBenchmark}; the FliX ones once per backend of {@code --backend}, default
 *       {@code cpu}, and {@code gpu} where usable).</li>
 *   <li>Rates ({@code --rates}, default {@code 0.1,0.5,0.9,2}): fractions of the heap-state job's maximum lookup
 *       rate, measured first in the same run as {@link EnrichmentBenchmark} measures it (the heap contestant with
 *       {@code --max-lookups} orders, default 2 x keys, as fast as it takes them) or given by
 *       {@code --heap-max-rate} (orders/s). At 2x the job cannot keep up: orders queue and their latency grows
 *       through the phase; it is reported as measured, and a contestant slower than the heap job queues at lower
 *       rates already (the backlog of one phase is carried into the next: read the achieved rate beside it).</li>
 *   <li>Phases ({@link PacedOrderSource}): one job per contestant and buffer timeout; once its dimension is loaded,
 *       the order source's clock starts: a warm-up of {@code --warmup-seconds} at {@code --warmup-rate} (a fraction
 *       of the maximum, default 0.5), not reported, then one phase of {@code --phase-seconds} per rate, in the order
 *       given. Each order is stamped with the time it was due (from the clock's start, not from the last emission:
 *       no drift; late orders keep their due time, so a source held back by back pressure counts in the latency)
 *       and its phase.</li>
 *   <li>Latency ({@link LatencyRecorder}): at the sink, chained to the enrichment, {@link System#nanoTime()} minus
 *       the stamp (one JVM: the local cluster runs in it), into an HdrHistogram (1 microsecond resolution, 3
 *       significant digits) of the phase the order was stamped in; each sink subtask's histograms are merged into the
 *       run's when it closes. Reported per phase: p50, p99, p99.9 and max; the orders emitted and the latencies
 *       recorded (equal: every order came out); the achieved rate, the orders that came out of the enrichment
 *       during the phase's window over its length.</li>
 *   <li>Buffer timeouts ({@code --buffer-timeouts}, default {@code 100,1}, milliseconds;
 *       {@link StreamExecutionEnvironment#setBufferTimeout}): every contestant runs with each: 100 is Flink's
 *       default; a latency-minded user lowers it. It matters where records cross an exchange (the keyed contestants'
 *       key-by; the shared mode's and the chained ceiling's lookups stay chained to their source).</li>
 *   <li>{@code --batch-size}, {@code --flush-ms}, {@code --flush-policy}, {@code --threads},
 *       {@code --exact-key-table}: the FliX operators' micro-batches and index settings, as in
 *       {@link EnrichmentBenchmark} (defaults 131072 records, 200 ms, load: both modes follow the load, so the
 *       interval only bounds the shared mode's update batches); {@code --rocksdb-managed} (default 4g) as there.</li>
 * </ul>
 *
 * <p>Output: the table on stdout, and under {@code --out} (default {@code latency-out}) {@code latency.csv}, a
 * {@code summary.md} and one plot per buffer timeout of p99 against the offered rate per contestant
 * ({@code p99-vs-rate-timeout-<ms>ms.png}); on a Java runtime that cannot draw (no fonts) the CSV and the summary
 * are written all the same, the summary saying why the plots are missing; {@code --plot-from <latency.csv>} draws
 * them later, on a machine that can, into {@code --out}. {@code --quick}: 20,000 keys, phases of
 * 0.3 s, a warm-up of 0.2 s (seconds a job: {@code LatencyBenchmarkSmokeTest}). Nothing here checks the answers
 * ({@link EnrichmentBenchmark} does, for the same jobs).
 *
 * <pre>
 * java -Xms10g -Xmx10g -XX:+AlwaysPreTouch -cp ... io.flix.examples.LatencyBenchmark --keys 10000000 --parallelism 2 \
 *     --backend cpu --out latency-cpu
 * </pre>
 */
public final class LatencyBenchmark {

    /** The contestants by default: the FliX modes, Flink's keyed state on the heap and in RocksDB, the ceiling. */
    static final List<String> DEFAULT_KINDS = List.of("flix-shared", "flix-keyed", "heap", "rocksdb",
            "ceiling-chained");

    /** The sink's name in every job. */
    private static final String LATENCY = "latency";

    /**
     * One contestant at one rate and buffer timeout. Latencies in nanoseconds; {@code emitted}: orders the source
     * offered in the phase; {@code recorded}: latencies recorded for them.
     */
    public record Row(String contestant, String backend, long bufferTimeoutMillis, double rateFraction,
                      double offeredPerSecond, double achievedPerSecond, long emitted, long recorded, long p50,
                      long p99, long p999, long max) {
        @Override
        public String toString() {
            return String.format(Locale.ROOT,
                    "%-20s timeout=%3d ms rate=%4.2fx offered=%,.0f/s achieved=%,.0f/s orders=%d p50=%s p99=%s "
                            + "p99.9=%s max=%s backend=%s",
                    contestant, bufferTimeoutMillis, rateFraction, offeredPerSecond, achievedPerSecond, emitted,
                    millis(p50), millis(p99), millis(p999), millis(max), backend);
        }
    }

    /** What a run measured: the heap job's maximum the rates are fractions of, and the rows. */
    public record Report(double heapMaxPerSecond, boolean heapMaxMeasured, List<Row> rows, Path out,
                         List<Path> plots, List<String> notes) {
    }

    private LatencyBenchmark() {
    }

    public static void main(String[] args) throws Exception {
        run(args);
    }

    /** Runs the benchmark as {@link #main} does and returns what it measured. */
    public static Report run(String[] args) throws Exception {
        final Args options = Args.of(args);
        final String plotFrom = options.text("--plot-from", null);
        if (plotFrom != null) {
            return plotFrom(Path.of(plotFrom), Path.of(options.text("--out", "latency-out")));
        }
        final boolean quick = options.flag("--quick");
        final long keys = options.number("--keys", quick ? 20_000 : 10_000_000);
        final int parallelism = (int) options.number("--parallelism", 2);
        final double phaseSeconds = decimal(options, "--phase-seconds", quick ? 0.3 : 20);
        final double warmupSeconds = decimal(options, "--warmup-seconds", quick ? 0.2 : 5);
        final double warmupRate = decimal(options, "--warmup-rate", 0.5);
        final List<Double> rates = new ArrayList<>();
        for (String rate : options.text("--rates", "0.1,0.5,0.9,2").split(",")) {
            rates.add(Double.parseDouble(rate.trim()));
        }
        final List<Long> timeouts = new ArrayList<>();
        for (String timeout : options.text("--buffer-timeouts", "100,1").split(",")) {
            timeouts.add(Long.parseLong(timeout.trim()));
        }
        if (keys < 1 || parallelism < 1 || !(phaseSeconds > 0) || !(warmupSeconds > 0) || !(warmupRate > 0)
                || rates.stream().anyMatch(r -> !(r > 0)) || timeouts.stream().anyMatch(t -> t < 0)) {
            throw new IllegalArgumentException("--keys, --parallelism, --phase-seconds, --warmup-seconds, "
                    + "--warmup-rate and --rates must be > 0 and --buffer-timeouts >= 0");
        }
        final String gpuUnusable = Backend.GPU.unavailableReason();
        final List<Backend> backends = new ArrayList<>();
        for (String name : options.text("--backend", gpuUnusable == null ? "cpu,gpu" : "cpu").split(",")) {
            backends.add(Backend.valueOf(name.trim().toUpperCase(Locale.ROOT)));
        }
        final List<Contestant> contestants = new ArrayList<>();
        for (String kind : options.text("--variants", String.join(",", DEFAULT_KINDS)).split(",")) {
            if (kind.trim().startsWith("flix-")) {
                for (Backend backend : backends) {
                    contestants.add(new Contestant(kind.trim(), backend));
                }
            } else {
                contestants.add(Contestant.of(kind.trim()));
            }
        }
        final Setup setup = Setup.of("long", keys, 1, parallelism)
                .withSavepoint(false)
                .withRocksdbManaged(MemorySize.parse(options.text("--rocksdb-managed", quick ? "256m" : "4g")))
                .withBatches((int) options.number("--batch-size", 1 << 17), options.number("--flush-ms", 200))
                .withFlushPolicy(EnrichmentBenchmark.flushPolicy(options))
                .withFlixThreads((int) options.number("--threads", 0))
                .withFlixExactKeyTable(!options.text("--exact-key-table", "on").equals("off"));
        final Path out = Path.of(options.text("--out", "latency-out"));
        System.out.printf(Locale.ROOT, "keys=%d parallelism=%d cores=%d maxHeap=%.1f GiB batch=%d flush=%d ms "
                        + "rates=%s x heap max, phases of %.2f s after a warm-up of %.2f s at %.2f x, buffer timeouts "
                        + "%s ms, gpu=%s%n", keys, parallelism, Runtime.getRuntime().availableProcessors(),
                Runtime.getRuntime().maxMemory() / 1073741824.0, setup.batchSize(), setup.flushMillis(), rates,
                phaseSeconds, warmupSeconds, warmupRate, timeouts,
                gpuUnusable == null ? "usable" : gpuUnusable.lines().findFirst().orElse(gpuUnusable));

        final String given = options.text("--heap-max-rate", null);
        final double heapMax;
        if (given != null) {
            heapMax = Double.parseDouble(given.replace("_", ""));
            System.out.printf(Locale.ROOT, "heap max (given): %,.0f lookups/s%n", heapMax);
        } else {
            final long lookups = options.number("--max-lookups", quick ? 40_000 : 2 * keys);
            final EnrichmentBenchmark.Result max = EnrichmentBenchmark.run(Contestant.of("heap"),
                    setup.withSizes(keys, lookups));
            heapMax = max.lookupsPerSecond();
            System.out.printf(Locale.ROOT, "heap max (measured, %d lookups): %,.0f lookups/s%n", lookups, heapMax);
        }
        if (!(heapMax > 0)) {
            throw new IllegalArgumentException("the heap job's maximum rate must be > 0, was " + heapMax);
        }
        final double[] phaseRates = new double[rates.size() + 1];
        final double[] phaseLengths = new double[rates.size() + 1];
        phaseRates[0] = warmupRate * heapMax;
        phaseLengths[0] = warmupSeconds;
        for (int j = 0; j < rates.size(); j++) {
            phaseRates[j + 1] = rates.get(j) * heapMax;
            phaseLengths[j + 1] = phaseSeconds;
        }
        final PacedOrderSource.Schedule schedule = new PacedOrderSource.Schedule(phaseRates, phaseLengths);

        final List<Row> rows = new ArrayList<>();
        for (long timeout : timeouts) {
            for (Contestant contestant : contestants) {
                final List<Row> measured = run(contestant, setup, timeout, schedule, rates);
                measured.forEach(System.out::println);
                rows.addAll(measured);
            }
        }
        System.out.println();
        System.out.print(table(rows));
        return write(out, heapMax, given == null, setup, schedule, rows);
    }

    /**
     * One contestant's job with buffer timeout {@code timeoutMillis}: loads the dimension, then runs the schedule's
     * phases; one row per phase after the warm-up ({@code rates}: their fractions of the heap maximum).
     */
    static List<Row> run(Contestant contestant, Setup setup, long timeoutMillis, PacedOrderSource.Schedule schedule,
                         List<Double> rates) throws Exception {
        BenchmarkProgress.resetProgress();
        final String runId = contestant.label() + "@" + timeoutMillis + "ms-" + UUID.randomUUID();
        final LatencyRecorder.Run run = LatencyRecorder.start(runId, schedule);
        final Path checkpoints = Files.createTempDirectory("flix-latency-checkpoints");
        try {
            final Configuration conf = EnrichmentBenchmark.configuration(contestant, setup, checkpoints);
            final StreamExecutionEnvironment env =
                    StreamExecutionEnvironment.createLocalEnvironment(setup.parallelism(), conf);
            env.setBufferTimeout(timeoutMillis);
            final DataStream<Order> orders = env.fromSource(new PacedOrderSource(runId, setup.keys(), schedule),
                    WatermarkStrategy.noWatermarks(), "orders").uid("orders");
            EnrichmentBenchmark.enrich(contestant, setup, EnrichmentBenchmark.priceUpdates(env, setup.keys()), orders,
                            p -> p.id, p -> p.price, Types.LONG)
                    .sinkTo(new LatencyRecorder.LatencySink<Long>(runId)).name(LATENCY).uid(LATENCY);
            final String backend;
            try (LocalJob job = LocalJob.start(env, conf, contestant.label() + " latency", null)) {
                final JobClient client = job.client();
                while (!EnrichmentBenchmark.loaded(contestant, setup)) {
                    if (client.getJobExecutionResult().isDone()) {
                        client.getJobExecutionResult().get(); // throws where the job failed
                        throw new IllegalStateException(contestant.label() + ": the job ended before the dimension "
                                + "was loaded");
                    }
                    Thread.sleep(1);
                }
                backend = EnrichmentBenchmark.backendUsed(contestant);
                System.gc(); // the load's garbage is not the phases' to collect
                run.release(System.nanoTime());
                client.getJobExecutionResult().get(1, TimeUnit.HOURS);
            }
            if (run.writersClosed() != setup.parallelism()) {
                throw new IllegalStateException(contestant.label() + ": " + run.writersClosed() + " of "
                        + setup.parallelism() + " sink subtasks reported their latencies");
            }
            final List<Row> rows = new ArrayList<>();
            for (int j = 1; j < schedule.phases(); j++) {
                final Histogram latencies = run.latencies(j);
                rows.add(new Row(contestant.label(), backend, timeoutMillis, rates.get(j - 1), schedule.rates()[j],
                        run.outputsInWindow(j) / schedule.seconds()[j], run.emitted(j), latencies.getTotalCount(),
                        latencies.getValueAtPercentile(50), latencies.getValueAtPercentile(99),
                        latencies.getValueAtPercentile(99.9), latencies.getMaxValue()));
            }
            return rows;
        } finally {
            LatencyRecorder.end(runId);
            EnrichmentBenchmark.deleteRecursively(checkpoints);
        }
    }

    /** The rows as a Markdown table, each line ending with a line break. */
    static String table(List<Row> rows) {
        final StringBuilder out = new StringBuilder();
        out.append("| contestant | backend | buffer timeout ms | rate / heap max | offered /s | achieved /s | orders "
                + "| p50 ms | p99 ms | p99.9 ms | max ms |\n");
        out.append("|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (Row row : rows) {
            out.append(String.format(Locale.ROOT, "| %s | %s | %d | %.2f | %.0f | %.0f | %d | %s | %s | %s | %s |%n",
                    row.contestant(), row.backend(), row.bufferTimeoutMillis(), row.rateFraction(),
                    row.offeredPerSecond(), row.achievedPerSecond(), row.emitted(), millis(row.p50()),
                    millis(row.p99()), millis(row.p999()), millis(row.max())));
        }
        return out.toString();
    }

    static final String CSV_HEADER = "contestant,backend,buffer_timeout_ms,rate_fraction,offered_per_sec,"
            + "achieved_per_sec,orders,recorded,p50_us,p99_us,p999_us,max_us";

    /** latency.csv, the plots and summary.md under {@code out}. */
    private static Report write(Path out, double heapMax, boolean measured, Setup setup,
                                PacedOrderSource.Schedule schedule, List<Row> rows) throws IOException {
        Files.createDirectories(out);
        final StringBuilder csv = new StringBuilder(CSV_HEADER).append('\n');
        for (Row row : rows) {
            csv.append(String.format(Locale.ROOT, "%s,%s,%d,%.3f,%.1f,%.1f,%d,%d,%.1f,%.1f,%.1f,%.1f%n",
                    row.contestant(), row.backend().replace(',', ' '), row.bufferTimeoutMillis(), row.rateFraction(),
                    row.offeredPerSecond(), row.achievedPerSecond(), row.emitted(), row.recorded(), row.p50() / 1e3,
                    row.p99() / 1e3, row.p999() / 1e3, row.max() / 1e3));
        }
        Files.writeString(out.resolve("latency.csv"), csv);
        final List<String> notes = new ArrayList<>();
        List<Path> plots = List.of();
        try {
            plots = plots(out, rows);
        } catch (LinkageError | java.awt.AWTError | InternalError | RuntimeException e) {
            // a runtime without fonts fails in many ways; the CSV and the summary are the results
            notes.add("plots not drawn here (" + e + "); latency.csv has their data");
        }
        final StringBuilder summary = new StringBuilder("# Enrichment latency\n\n");
        summary.append(String.format(Locale.ROOT, "%d keys, parallelism %d, %d cores, max heap %.1f GiB; FliX "
                        + "micro-batches of %d records or %d ms. Heap-state job's maximum: %,.0f lookups/s (%s). "
                        + "Warm-up %.2f s at %,.0f/s (not reported), then phases of %.2f s. Latency: output time "
                        + "minus the order's due time, per phase the order was stamped in; achieved: orders out of "
                        + "the enrichment during the phase's window over its length.%n%n",
                setup.keys(), setup.parallelism(), Runtime.getRuntime().availableProcessors(),
                Runtime.getRuntime().maxMemory() / 1073741824.0, setup.batchSize(), setup.flushMillis(), heapMax,
                measured ? "measured in this run" : "given", schedule.seconds()[0], schedule.rates()[0],
                schedule.seconds()[1]));
        summary.append(table(rows));
        summary.append('\n');
        for (Path plot : plots) {
            summary.append("![").append(plot.getFileName()).append("](").append(plot.getFileName()).append(")\n");
        }
        for (String note : notes) {
            summary.append("\nNote: ").append(note).append('\n');
        }
        Files.writeString(out.resolve("summary.md"), summary);
        System.out.println("wrote " + out.resolve("latency.csv") + ", " + out.resolve("summary.md") + " and "
                + plots.size() + " plots");
        return new Report(heapMax, measured, List.copyOf(rows), out, plots, notes);
    }

    /**
     * Draws the plots of a {@code latency.csv} written on a machine that could not draw (a runtime without fonts)
     * into {@code out}; the report's heap maximum is unknown (0).
     */
    private static Report plotFrom(Path csv, Path out) throws IOException {
        final List<String> lines = Files.readAllLines(csv);
        if (lines.isEmpty() || !lines.get(0).equals(CSV_HEADER)) {
            throw new IllegalArgumentException(csv + " is not a latency.csv: its first line is not " + CSV_HEADER);
        }
        final List<Row> rows = new ArrayList<>();
        for (String line : lines.subList(1, lines.size())) {
            final String[] f = line.split(",");
            if (f.length != 12) {
                throw new IllegalArgumentException(csv + ": a row of " + f.length + " fields, not 12: " + line);
            }
            rows.add(new Row(f[0], f[1], Long.parseLong(f[2]), Double.parseDouble(f[3]), Double.parseDouble(f[4]),
                    Double.parseDouble(f[5]), Long.parseLong(f[6]), Long.parseLong(f[7]), nanosOfMicros(f[8]),
                    nanosOfMicros(f[9]), nanosOfMicros(f[10]), nanosOfMicros(f[11])));
        }
        Files.createDirectories(out);
        final List<Path> plots = plots(out, rows);
        System.out.println("drew " + plots.size() + " plots of " + rows.size() + " rows into " + out);
        return new Report(0, false, List.copyOf(rows), out, plots, List.of());
    }

    /** A CSV field in microseconds, in nanoseconds. */
    private static long nanosOfMicros(String field) {
        return Math.round(Double.parseDouble(field) * 1e3);
    }

    /** One PNG per buffer timeout: p99 against the offered rate, a series per contestant. */
    private static List<Path> plots(Path out, List<Row> rows) throws IOException {
        final List<Path> written = new ArrayList<>();
        for (long timeout : new LinkedHashSet<>(rows.stream().map(Row::bufferTimeoutMillis).toList())) {
            final XYChart chart = new XYChartBuilder().width(900).height(500)
                    .title("p99 latency against offered rate, buffer timeout " + timeout + " ms")
                    .xAxisTitle("offered orders/s").yAxisTitle("p99 ms (log scale)").build();
            chart.getStyler().setChartBackgroundColor(Color.WHITE);
            chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
            chart.getStyler().setYAxisLogarithmic(true);
            for (String contestant : new LinkedHashSet<>(rows.stream().map(Row::contestant).toList())) {
                final List<Row> mine = rows.stream()
                        .filter(r -> r.bufferTimeoutMillis() == timeout && r.contestant().equals(contestant))
                        .toList();
                final XYSeries series = chart.addSeries(contestant,
                        mine.stream().mapToDouble(Row::offeredPerSecond).toArray(),
                        // a log axis takes no zero: at least the histogram's resolution
                        mine.stream().mapToDouble(r -> Math.max(r.p99(), 1_000) / 1e6).toArray());
                series.setMarker(SeriesMarkers.CIRCLE);
            }
            final Path file = out.resolve("p99-vs-rate-timeout-" + timeout + "ms.png");
            BitmapEncoder.saveBitmap(chart, file.toString(), BitmapEncoder.BitmapFormat.PNG);
            written.add(file);
        }
        return written;
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.3f", nanos / 1e6);
    }

    private static double decimal(Args options, String name, double fallback) {
        final String value = options.text(name, null);
        try {
            return value == null ? fallback : Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + " takes a number, not '" + value + "'", e);
        }
    }
}
