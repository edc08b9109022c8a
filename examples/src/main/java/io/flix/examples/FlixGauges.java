package io.flix.examples;

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
import java.util.concurrent.ConcurrentHashMap;

/**
 * Keeps the FliX operators' gauges ({@code flix*}) of the jobs of a local cluster in this JVM, by operator name and
 * subtask, so that {@link EnrichmentBenchmark} can read them while its job runs and after it ends: the index size
 * (whether the dimension is loaded), the index bytes and the backend. Registered with the local cluster by
 * {@code metrics.reporter.<name>.factory.class} (and META-INF/services).
 */
public final class FlixGauges implements MetricReporter, MetricReporterFactory {

    /** A gauge of one operator subtask. */
    private record Source(String operator, int subtask, String metric) {
    }

    private static final Map<Source, Gauge<?>> GAUGES = new ConcurrentHashMap<>();

    /** Forgets the gauges of earlier jobs. */
    static void clear() {
        GAUGES.clear();
    }

    /** The values of gauge {@code metric} of the operator named {@code operator}, one per subtask registered. */
    static List<Object> values(String operator, String metric) {
        final List<Object> values = new ArrayList<>();
        GAUGES.forEach((source, gauge) -> {
            if (source.operator().equals(operator) && source.metric().equals(metric)) {
                values.add(gauge.getValue());
            }
        });
        return values;
    }

    /** The value of gauge {@code metric} of one operator subtask, or null where it has none. */
    static Object value(String operator, int subtask, String metric) {
        final Gauge<?> gauge = GAUGES.get(new Source(operator, subtask, metric));
        return gauge == null ? null : gauge.getValue();
    }

    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        return new FlixGauges();
    }

    @Override
    public void open(MetricConfig config) {
    }

    @Override
    public void close() {
    }

    @Override
    public void notifyOfAddedMetric(Metric metric, String metricName, MetricGroup group) {
        if (metricName.startsWith("flix") && metric instanceof Gauge<?> gauge) {
            final Map<String, String> variables = group.getAllVariables();
            final String operator = variables.get("<operator_name>");
            final String subtask = variables.get("<subtask_index>");
            if (operator != null && subtask != null) {
                GAUGES.put(new Source(operator, Integer.parseInt(subtask), metricName), gauge);
            }
        }
    }

    @Override
    public void notifyOfRemovedMetric(Metric metric, String metricName, MetricGroup group) {
        // kept: the job's gauges are read after it ends
    }
}
