package io.flix.examples;

import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps the FliX operators' metrics ({@code flix*} gauges and counters) of the jobs of a local cluster in this JVM,
 * by job, operator name and subtask, so that the examples can read them while their job runs and after it ends
 * ({@link EnrichmentBenchmark}: whether the dimension is loaded, its bytes, the backend; {@link SharedDimensionGate}:
 * what each task manager's dimension has applied). Registered with the local cluster by {@link #addTo} (and
 * META-INF/services).
 */
public final class FlixMetrics implements MetricReporter, MetricReporterFactory {

    private static final String REPORTER = "flixmetrics";

    /** A metric of one operator subtask of one job. */
    private record Source(String job, String operator, int subtask, String metric) {
    }

    /** Kept after their task ends: a finished job's figures are still read. */
    private static final Map<Source, Metric> METRICS = new ConcurrentHashMap<>();

    /** The configuration with this reporter added. */
    public static Configuration addTo(Configuration configuration) {
        configuration.set(ConfigOptions.key("metrics.reporter." + REPORTER + ".factory.class").stringType()
                .noDefaultValue(), FlixMetrics.class.getName());
        return configuration;
    }

    /** Forgets the metrics of earlier jobs. */
    static void clear() {
        METRICS.clear();
    }

    /** The values of metric {@code metric} of the operator named {@code operator}, one per subtask, any job. */
    static List<Object> values(String operator, String metric) {
        final List<Object> values = new ArrayList<>();
        METRICS.forEach((source, m) -> {
            if (source.operator().equals(operator) && source.metric().equals(metric)) {
                values.add(valueOf(m));
            }
        });
        return values;
    }

    /** The value of metric {@code metric} of one operator subtask, any job, or null where it has none. */
    static Object value(String operator, int subtask, String metric) {
        for (Map.Entry<Source, Metric> e : METRICS.entrySet()) {
            final Source source = e.getKey();
            if (source.operator().equals(operator) && source.subtask() == subtask && source.metric().equals(metric)) {
                return valueOf(e.getValue());
            }
        }
        return null;
    }

    /** The numeric value of metric {@code metric} on each subtask of an operator of one job that has reported it. */
    static Map<Integer, Long> numbers(String job, String operator, String metric) {
        final Map<Integer, Long> values = new TreeMap<>();
        METRICS.forEach((source, m) -> {
            if (source.job().equals(job) && source.operator().equals(operator) && source.metric().equals(metric)) {
                values.put(source.subtask(), ((Number) valueOf(m)).longValue());
            }
        });
        return values;
    }

    private static Object valueOf(Metric metric) {
        return metric instanceof Counter counter ? (Object) counter.getCount() : ((Gauge<?>) metric).getValue();
    }

    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        return new FlixMetrics();
    }

    @Override
    public void open(MetricConfig config) {
    }

    @Override
    public void close() {
    }

    @Override
    public void notifyOfAddedMetric(Metric metric, String metricName, MetricGroup group) {
        if (metricName.startsWith("flix") && (metric instanceof Gauge<?> || metric instanceof Counter)) {
            final Map<String, String> variables = group.getAllVariables();
            final String operator = variables.get("<operator_name>");
            final String subtask = variables.get("<subtask_index>");
            if (operator != null && subtask != null) {
                METRICS.put(new Source(variables.get("<job_id>"), operator, Integer.parseInt(subtask), metricName),
                        metric);
            }
        }
    }

    @Override
    public void notifyOfRemovedMetric(Metric metric, String metricName, MetricGroup group) {
        // kept: a finished job's figures are read after it ends
    }
}
