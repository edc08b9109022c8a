package io.flix.bench;

import io.flix.bench.BenchOptions.XyWorkload;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.internal.chartpart.Chart;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.lines.SeriesLines;
import org.knowm.xchart.style.markers.SeriesMarkers;

import javax.imageio.ImageIO;
import java.awt.Color;
import java.awt.Font;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

/**
 * The paper's figures as PNG files, one panel per X/Y workload: insert and delete time per round, hit and miss
 * lookup time per round (sorted and unsorted), memory per round, and query throughput per byte of memory.
 */
final class Plots {

    private static final int PANEL_WIDTH = 820;
    private static final int PANEL_HEIGHT = 440;
    private static final Color[] PALETTE = {
        new Color(0xD62728), new Color(0x1F77B4), new Color(0x2CA02C), new Color(0x9467BD),
        new Color(0xFF7F0E), new Color(0x8C564B), new Color(0xE377C2), new Color(0x17BECF), new Color(0x7F7F7F),
        new Color(0xBCBD22)};

    private Plots() {
    }

    static List<Path> write(Path dir, BenchOptions o, List<Bench.Result> results) throws IOException {
        final List<String> labels = new ArrayList<>(new LinkedHashSet<>(results.stream().map(Bench.Result::label)
                .toList()));
        final List<Path> written = new ArrayList<>();
        written.add(grid(dir.resolve("insert-time.png"), o, w -> timeChart(results, labels, w,
                "insert time per round, " + w.label(), List.of("insert"))));
        written.add(grid(dir.resolve("delete-time.png"), o, w -> timeChart(results, labels, w,
                "delete time per round, " + w.label(), List.of("delete"))));
        written.add(grid(dir.resolve("lookup-time-sorted.png"), o, w -> timeChart(results, labels, w,
                "sorted lookups of " + o.probeSize() + ", " + w.label(), List.of("get_hit_sorted", "get_miss_sorted"))));
        written.add(grid(dir.resolve("lookup-time-unsorted.png"), o, w -> timeChart(results, labels, w,
                "unsorted lookups of " + o.probeSize() + " (sort counted), " + w.label(),
                List.of("get_hit_unsorted", "get_miss_unsorted"))));
        written.add(grid(dir.resolve("memory.png"), o, w -> memoryChart(results, labels, w)));
        written.add(grid(dir.resolve("throughput-per-byte.png"), o, w -> throughputPerByteChart(results, labels, w)));
        return written;
    }

    private interface PanelMaker {
        Chart<?, ?> make(XyWorkload workload);
    }

    /** One panel per workload, two to a row, in one PNG. */
    private static Path grid(Path file, BenchOptions o, PanelMaker maker) throws IOException {
        final List<XyWorkload> workloads = o.workloads();
        final int cols = Math.min(2, workloads.size());
        final int rows = (workloads.size() + cols - 1) / cols;
        final BufferedImage image = new BufferedImage(cols * PANEL_WIDTH, rows * PANEL_HEIGHT,
                BufferedImage.TYPE_INT_RGB);
        final Graphics2D g = image.createGraphics();
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, image.getWidth(), image.getHeight());
        for (int i = 0; i < workloads.size(); i++) {
            final BufferedImage panel = BitmapEncoder.getBufferedImage(maker.make(workloads.get(i)));
            g.drawImage(panel, (i % cols) * PANEL_WIDTH, (i / cols) * PANEL_HEIGHT, null);
        }
        g.dispose();
        ImageIO.write(image, "png", file.toFile());
        return file;
    }

    private static XYChart timeChart(List<Bench.Result> results, List<String> labels, XyWorkload w,
                                     String title, List<String> operations) {
        final XYChart chart = xyChart(title, "ms (log scale)");
        chart.getStyler().setYAxisLogarithmic(true);
        for (int li = 0; li < labels.size(); li++) {
            for (int oi = 0; oi < operations.size(); oi++) {
                final String op = operations.get(oi);
                final String label = labels.get(li);
                final List<Bench.Result> mine = Summary.filter(results, r -> r.workload().equals(w.label())
                        && r.label().equals(label) && r.operation().equals(op));
                if (mine.isEmpty()) {
                    continue;
                }
                final String name = operations.size() == 1 ? legend(label)
                        : legend(label) + (op.contains("hit") ? " hit" : " miss");
                final XYSeries s = chart.addSeries(name, mine.stream().mapToDouble(Bench.Result::round).toArray(),
                        mine.stream().mapToDouble(Bench.Result::ms).toArray());
                style(s, li, oi);
            }
        }
        return chart;
    }

    private static XYChart memoryChart(List<Bench.Result> results, List<String> labels, XyWorkload w) {
        final XYChart chart = xyChart("memory per round, " + w.label(), "MiB");
        for (int li = 0; li < labels.size(); li++) {
            final String label = labels.get(li);
            final List<Bench.Result> mine = Summary.filter(results, r -> r.workload().equals(w.label())
                    && r.label().equals(label) && r.operation().equals("memory") && r.bytes() >= 0);
            if (mine.isEmpty()) {
                continue;
            }
            style(chart.addSeries(legend(label), mine.stream().mapToDouble(Bench.Result::round).toArray(),
                    mine.stream().mapToDouble(r -> r.bytes() / 1048576.0).toArray()), li, 0);
            final List<Bench.Result> restructured = Summary.filter(results, r -> r.workload().equals(w.label())
                    && r.label().equals(label) && r.operation().equals("memory_restructured"));
            if (!restructured.isEmpty()) {
                style(chart.addSeries(legend(label) + " restructured",
                        restructured.stream().mapToDouble(Bench.Result::round).toArray(),
                        restructured.stream().mapToDouble(r -> r.bytes() / 1048576.0).toArray()), li, 1);
            }
        }
        return chart;
    }

    private static CategoryChart throughputPerByteChart(List<Bench.Result> results, List<String> labels,
                                                        XyWorkload w) {
        final CategoryChart chart = new CategoryChartBuilder().width(PANEL_WIDTH).height(PANEL_HEIGHT)
                .title("hit lookups/s per byte (median of rounds), " + w.label())
                .yAxisTitle("lookups/s per byte").build();
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setXAxisLabelRotation(10);
        chart.getStyler().setAxisTickLabelsFont(new Font(Font.SANS_SERIF, Font.PLAIN, 10));
        final List<Bench.Result> rows = Summary.filter(results, r -> r.workload().equals(w.label()));
        for (String op : List.of("get_hit_sorted", "get_hit_unsorted")) {
            final List<String> names = new ArrayList<>();
            final List<Number> values = new ArrayList<>();
            for (String label : labels) {
                final double v = queriesPerSecondPerByte(rows, label, op);
                if (!Double.isNaN(v)) {
                    names.add(legend(label));
                    values.add(v);
                }
            }
            if (!names.isEmpty()) {
                chart.addSeries(op.endsWith("unsorted") ? "unsorted" : "sorted", names, values);
            }
        }
        return chart;
    }

    /** Median over rounds of (lookups per second / bytes held at that round); NaN where bytes are unknown. */
    static double queriesPerSecondPerByte(List<Bench.Result> rows, String label, String operation) {
        final double[] v = rows.stream().filter(r -> r.label().equals(label) && r.operation().equals(operation)
                && r.bytes() > 0).mapToDouble(r -> r.opsPerSec() / r.bytes()).toArray();
        return v.length == 0 ? Double.NaN : Summary.median(v);
    }

    /** FliX and the GPU structures keep their backend in the legend; CPU baselines drop it. */
    private static String legend(String label) {
        return label.startsWith("flix-") || !label.endsWith("-cpu") ? label
                : label.substring(0, label.lastIndexOf('-'));
    }

    private static XYChart xyChart(String title, String yTitle) {
        final XYChart chart = new XYChartBuilder().width(PANEL_WIDTH).height(PANEL_HEIGHT).title(title)
                .xAxisTitle("round (0 build, then inserts, then deletes)").yAxisTitle(yTitle).build();
        chart.getStyler().setChartBackgroundColor(Color.WHITE);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
        chart.getStyler().setLegendFont(new Font(Font.SANS_SERIF, Font.PLAIN, 11));
        chart.getStyler().setXAxisDecimalPattern("0");
        return chart;
    }

    private static void style(XYSeries s, int labelIndex, int operationIndex) {
        final Color c = PALETTE[labelIndex % PALETTE.length];
        s.setLineColor(c);
        s.setMarkerColor(c);
        s.setMarker(operationIndex == 0 ? SeriesMarkers.CIRCLE : SeriesMarkers.DIAMOND);
        s.setLineStyle(operationIndex == 0 ? SeriesLines.SOLID : SeriesLines.DASH_DASH);
    }
}
