package io.graphlane.cli.trace;

import java.util.List;
import java.util.Locale;

/**
 * Renders a {@link LaneTimeline} as one self-contained HTML page (inline SVG, no scripts
 * or resources from elsewhere): a row per lane with its work intervals, and a table of
 * busy and bubble time per lane.
 */
public final class TimelineHtml {
    private static final int WIDTH = 1200;
    private static final int LABEL = 180;
    private static final int ROW = 28;

    private TimelineHtml() {
    }

    public static String render(LaneTimeline timeline, String title) {
        List<String> lanes = timeline.lanes();
        double wall = Math.max(timeline.wallUs(), 1e-9);
        double scale = (WIDTH - LABEL - 10) / wall;
        int height = ROW * lanes.size() + 30;
        StringBuilder svg = new StringBuilder();
        svg.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\">%n", WIDTH, height));
        for (int row = 0; row < lanes.size(); row++) {
            String lane = lanes.get(row);
            int y = row * ROW;
            svg.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>%n",
                    LABEL, y + 4, WIDTH - LABEL - 10, ROW - 8, "#f1f1f1"));
            svg.append(String.format(Locale.ROOT, "<text x=\"4\" y=\"%d\" font-size=\"13\" font-family=\"monospace\">%s</text>%n",
                    y + ROW / 2 + 5, escape(lane)));
            for (LaneTimeline.Interval i : timeline.intervals(lane)) {
                double x = LABEL + (i.startUs() - timeline.windowStartUs()) * scale;
                double w = Math.max(0.5, (i.endUs() - i.startUs()) * scale);
                svg.append(String.format(Locale.ROOT,
                        "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>%s: %.1f µs</title></rect>%n",
                        x, y + 4, w, ROW - 8, i.ok() ? "#3b7dd8" : "#d83b3b", escape(i.name()), i.endUs() - i.startUs()));
            }
        }
        svg.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" font-size=\"12\" font-family=\"sans-serif\">0</text>%n",
                LABEL, height - 8));
        svg.append(String.format(Locale.ROOT,
                "<text x=\"%d\" y=\"%d\" font-size=\"12\" font-family=\"sans-serif\" text-anchor=\"end\">%s</text>%n",
                WIDTH - 10, height - 8, formatUs(wall)));
        svg.append("</svg>\n");

        StringBuilder table = new StringBuilder("<table><tr><th>lane</th><th>work items</th><th>busy</th><th>bubble</th><th>busy %</th></tr>\n");
        for (LaneTimeline.LaneStats s : timeline.stats()) {
            table.append(String.format(Locale.ROOT, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%.1f%%</td></tr>%n",
                    escape(s.lane()), s.workItems(), formatUs(s.busyUs()), formatUs(s.bubbleUs()), 100 * s.busyFraction()));
        }
        table.append("</table>\n");

        return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + escape(title) + "</title>\n"
                + "<style>body{font-family:sans-serif;margin:20px}table{border-collapse:collapse;margin-top:16px}"
                + "td,th{border:1px solid #ccc;padding:4px 10px;text-align:right}td:first-child,th:first-child{text-align:left}</style>\n"
                + "</head><body>\n<h2>" + escape(title) + "</h2>\n"
                + "<p>Window with work: " + formatUs(timeline.wallUs()) + ". Busy is the union of a lane's work intervals; bubble is the rest of the window.</p>\n"
                + svg + table + "</body></html>\n";
    }

    static String formatUs(double us) {
        if (us >= 1e6) {
            return String.format(Locale.ROOT, "%.3f s", us / 1e6);
        }
        if (us >= 1e3) {
            return String.format(Locale.ROOT, "%.3f ms", us / 1e3);
        }
        return String.format(Locale.ROOT, "%.1f µs", us);
    }

    static String escape(String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
