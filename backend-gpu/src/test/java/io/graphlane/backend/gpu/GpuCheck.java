package io.graphlane.backend.gpu;

import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.util.ArrayList;
import java.util.List;
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
 * on a GPU host) and prints one line per class: passed, failed, skipped with the skip reason.
 * Exits 1 if anything failed, 0 otherwise.
 */
public final class GpuCheck {
    private GpuCheck() {
    }

    public static void main(String[] args) throws ClassNotFoundException {
        Launcher launcher = LauncherFactory.create();
        boolean failed = false;
        for (String className : args) {
            Map<String, Integer> counts = new ConcurrentHashMap<>();
            List<String> details = new ArrayList<>();
            LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request().selectors(selectClass(Class.forName(className))).build();
            launcher.execute(request, new TestExecutionListener() {
                @Override
                public void executionSkipped(TestIdentifier id, String reason) {
                    counts.merge("skipped", 1, Integer::sum);
                    if (details.size() < 3) {
                        details.add("skipped " + id.getDisplayName() + ": " + reason);
                    }
                }

                @Override
                public void executionFinished(TestIdentifier id, TestExecutionResult result) {
                    if (!id.isTest() && result.getStatus() == TestExecutionResult.Status.SUCCESSFUL) {
                        return;
                    }
                    String status = result.getStatus().name().toLowerCase(java.util.Locale.ROOT);
                    counts.merge(status, 1, Integer::sum);
                    boolean aborted = result.getStatus() == TestExecutionResult.Status.ABORTED;
                    if (aborted && counts.get(status) > 1) {
                        return; // one skip reason per class is enough
                    }
                    if (result.getStatus() != TestExecutionResult.Status.SUCCESSFUL) {
                        details.add(status + " " + id.getDisplayName() + ": "
                                + result.getThrowable().map(Throwable::toString).orElse("(no cause)"));
                    }
                }
            });
            boolean classFailed = counts.getOrDefault("failed", 0) > 0;
            failed |= classFailed;
            System.out.printf("GPUCHECK %-60s %s%n", className, counts);
            details.forEach(d -> System.out.println("    " + d.replace('\n', ' ')));
        }
        System.exit(failed ? 1 : 0);
    }
}
