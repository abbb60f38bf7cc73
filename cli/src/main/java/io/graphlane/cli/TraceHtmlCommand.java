package io.graphlane.cli;

import io.graphlane.cli.trace.LaneTimeline;
import io.graphlane.cli.trace.TimelineHtml;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code graphlane trace-html TRACE [-o FILE]}: renders a trace as a self-contained HTML timeline. */
@Command(name = "trace-html", mixinStandardHelpOptions = true,
        description = "Render a trace written with --trace as a self-contained HTML timeline with busy and bubble time per lane.")
public final class TraceHtmlCommand implements Callable<Integer> {

    @Parameters(paramLabel = "TRACE", description = "A Chrome trace-event JSON file written by --trace.")
    Path trace;

    @Option(names = {"-o", "--output"}, paramLabel = "FILE", description = "Where to write the HTML (default: TRACE with .html).")
    Path output;

    @Override
    public Integer call() throws IOException {
        LaneTimeline timeline = LaneTimeline.readChromeTrace(trace);
        Path out = output != null ? output : defaultOutput(trace);
        Files.writeString(out, TimelineHtml.render(timeline, "graphlane trace " + trace.getFileName()), StandardCharsets.UTF_8);
        System.out.println("wrote " + out + " (" + timeline.lanes().size() + " lanes)");
        return 0;
    }

    static Path defaultOutput(Path trace) {
        String name = trace.getFileName().toString();
        int dot = name.lastIndexOf('.');
        return trace.resolveSibling((dot > 0 ? name.substring(0, dot) : name) + ".html");
    }
}
