package io.graphlane.lanes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;

/**
 * The README's lane example as a user runs it: its code block written verbatim to {@code Main.java} in a directory of
 * its own, compiled against graphlane-lanes' runtime classpath only (what a project depending on it gets; written by
 * the dependency plugin into {@code target/runtime-classpath.txt}), and run in a JVM of its own, which must print the
 * answer and exit by itself: a runtime that left a thread alive would keep that JVM running past the timeout.
 */
class ReadmeEmbeddingTest {
    private static final Path README = Path.of("..", "README.md");

    @Test
    void theReadmeExampleCompilesRunsAndExits() throws Exception {
        String example = readmeExample();
        Path dir = Files.createDirectories(Path.of("target", "readme-example"));
        Path source = dir.resolve("Main.java");
        Files.writeString(source, example, StandardCharsets.UTF_8);
        String classpath = runtimeClasspath();

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "a JDK's compiler");
        int compiled = javac.run(null, null, null, "-d", dir.toString(), "-cp", classpath, source.toString());
        assertEquals(0, compiled, "the README example compiles against graphlane-lanes' runtime classpath");

        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path out = dir.resolve("out.txt");
        Process p = new ProcessBuilder(java.toString(), "-cp", dir + File.pathSeparator + classpath, "Main")
                .redirectErrorStream(true).redirectOutput(out.toFile()).start();
        boolean exited = p.waitFor(120, TimeUnit.SECONDS);
        if (!exited) {
            p.destroyForcibly();
        }
        String printed = Files.readString(out, StandardCharsets.UTF_8);
        assertTrue(exited, "the README example's JVM exits by itself; it printed:\n" + printed);
        assertEquals(0, p.exitValue(), printed);
        assertTrue(printed.lines().anyMatch("answer: 42"::equals), printed);
    }

    /**
     * The lane runtime needs no native jar and none of the inference or cluster stack: no JavaCPP or OpenBLAS, no
     * Jackson, no Kryo, no checkpoint reader.
     */
    @Test
    void theLaneRuntimePullsNoNativesJacksonKryoOrCheckpoint() throws Exception {
        List<String> refused = List.of("javacpp", "openblas", "jackson", "kryo", "graphlane-checkpoint", "checkpoint/target",
                "graphlane-backend-cpu-0", "backend-cpu/target", "graphlane-wire", "wire/target");
        List<String> found = new ArrayList<>();
        for (String entry : runtimeClasspath().split(File.pathSeparator)) {
            for (String r : refused) {
                if (entry.contains(r)) {
                    found.add(entry);
                }
            }
        }
        assertEquals(List.of(), found, "graphlane-lanes' runtime classpath");
    }

    /** The first java block after the README's "The lane runtime as a library" heading, as written. */
    static String readmeExample() throws Exception {
        List<String> lines = Files.readAllLines(README, StandardCharsets.UTF_8);
        int heading = lines.indexOf("## The lane runtime as a library");
        assertTrue(heading >= 0, "README.md has the heading 'The lane runtime as a library'");
        int start = -1;
        for (int i = heading + 1; i < lines.size(); i++) {
            if (lines.get(i).equals("```java")) {
                start = i + 1;
                break;
            }
        }
        assertTrue(start > 0, "a java block follows the heading");
        List<String> block = new ArrayList<>();
        for (int i = start; !lines.get(i).equals("```"); i++) {
            block.add(lines.get(i));
        }
        return String.join("\n", block) + "\n";
    }

    /** graphlane-lanes' own classes, then its runtime dependencies. */
    static String runtimeClasspath() throws Exception {
        Path file = Path.of("target", "runtime-classpath.txt");
        assertTrue(Files.exists(file), "target/runtime-classpath.txt, written by the dependency plugin before the tests");
        String deps = Files.readString(file, StandardCharsets.UTF_8).strip();
        return Path.of("target", "classes").toAbsolutePath() + (deps.isEmpty() ? "" : File.pathSeparator + deps);
    }
}
