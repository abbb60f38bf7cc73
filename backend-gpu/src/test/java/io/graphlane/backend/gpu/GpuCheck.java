package io.graphlane.backend.gpu;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;

/**
 * Runs the GPU test classes named on the command line without Maven (for {@code scripts/gpu-check.sh}
 * on a GPU host) and prints one verdict line per class and one for the whole run:
 * <pre>
 *   GPUCHECK class &lt;name&gt; passed {successful=12, aborted=1}
 *   GPUCHECK class &lt;name&gt; FAILED {...}        (then up to three failures)
 *   GPUCHECK class &lt;name&gt; SKIPPED: &lt;the first skip reason&gt;
 *   GPUCHECK classes passed=P failed=F skipped=S
 * </pre>
 * A class passed when at least one of its tests succeeded and none failed (some of its tests may be
 * skipped, such as those that only run without a GPU); it is skipped only when nothing in it ran.
 * Exits 1 if anything failed, 0 otherwise.
 */
public final class GpuCheck {
    private GpuCheck() {
    }

    /** The verdict of one class from its counts by status (successful, failed, aborted, skipped). */
    enum Verdict { PASSED, FAILED, SKIPPED }

    static Verdict verdict(Map<String, Integer> counts) {
        if (counts.getOrDefault("failed", 0) > 0) {
            return Verdict.FAILED;
        }
        return counts.getOrDefault("successful", 0) > 0 ? Verdict.PASSED : Verdict.SKIPPED;
    }

    public static void main(String[] args) throws ClassNotFoundException {
        Launcher launcher = LauncherFactory.create();
        int passed = 0;
        int failed = 0;
        int skipped = 0;
        for (String className : args) {
            Map<String, Integer> counts = new ConcurrentHashMap<>();
            List<String> failures = new ArrayList<>();
            List<String> skips = new ArrayList<>();
            LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request().selectors(selectClass(Class.forName(className))).build();
            launcher.execute(request, new TestExecutionListener() {
                @Override
                public void executionSkipped(TestIdentifier id, String reason) {
                    counts.merge("skipped", 1, Integer::sum);
                    skips.add(id.getDisplayName() + ": " + reason);
                }

                @Override
                public void executionFinished(TestIdentifier id, TestExecutionResult result) {
                    if (!id.isTest() && result.getStatus() == TestExecutionResult.Status.SUCCESSFUL) {
                        return;
                    }
                    String status = result.getStatus().name().toLowerCase(Locale.ROOT);
                    counts.merge(status, 1, Integer::sum);
                    String why = id.getDisplayName() + ": " + result.getThrowable().map(Throwable::toString).orElse("(no cause)");
                    if (result.getStatus() == TestExecutionResult.Status.FAILED) {
                        failures.add(why);
                    } else if (result.getStatus() == TestExecutionResult.Status.ABORTED) {
                        skips.add(why.replace("org.opentest4j.TestAbortedException: Assumption failed: ", ""));
                    }
                }
            });
            Verdict verdict = verdict(counts);
            switch (verdict) {
                case FAILED -> {
                    failed++;
                    System.out.printf("GPUCHECK class %s FAILED %s%n", className, counts);
                    failures.stream().limit(3).forEach(f -> System.out.println("    failed " + oneLine(f)));
                }
                case PASSED -> {
                    passed++;
                    System.out.printf("GPUCHECK class %s passed %s%n", className, counts);
                    skips.stream().limit(1).forEach(s -> System.out.println("    (skipped " + oneLine(s) + ")"));
                }
                case SKIPPED -> {
                    skipped++;
                    System.out.printf("GPUCHECK class %s SKIPPED: %s%n", className,
                            skips.isEmpty() ? "no test ran " + counts : oneLine(skips.get(0)));
                }
            }
        }
        System.out.printf("GPUCHECK classes passed=%d failed=%d skipped=%d%n", passed, failed, skipped);
        System.exit(failed > 0 ? 1 : 0);
    }

    private static String oneLine(String s) {
        return s.replace('\n', ' ');
    }
}
