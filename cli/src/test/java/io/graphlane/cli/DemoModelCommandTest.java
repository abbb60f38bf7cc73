package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.inference.demo.DemoModel;
import io.graphlane.inference.model.ModelDirectory;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code graphlane demo-model}: writes a loadable model, finds it on a rerun, refuses bad options with one line. */
class DemoModelCommandTest {
    private record Run(int status, String out, String err) {
    }

    private static Run demoModel(String... args) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        String[] all = new String[args.length + 1];
        all[0] = "demo-model";
        System.arraycopy(args, 0, all, 1, args.length);
        int status = cli.execute(all);
        return new Run(status, out.toString(), err.toString());
    }

    @Test
    void theDemoShapeIsWrittenThenFound(@TempDir Path root) {
        Path dir = root.resolve("demo");
        Run first = demoModel("--shape", "demo", "--dtype", "bf16", "--out", dir.toString());
        assertEquals(0, first.status(), first.err());
        assertTrue(first.out().startsWith("wrote demo bf16"), first.out());
        assertEquals(DemoModel.CONFIG, ModelDirectory.open(dir).config());
        Run second = demoModel("--shape", "demo", "--dtype", "bf16", "--out", dir.toString());
        assertEquals(0, second.status(), second.err());
        assertTrue(second.out().startsWith("found demo bf16"), second.out());
    }

    @Test
    void badOptionsAreOneLineAndExitTwo(@TempDir Path root) throws Exception {
        Run shape = demoModel("--shape", "llama-9b", "--out", root.resolve("x").toString());
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, shape.status());
        assertEquals(1, shape.err().strip().lines().count(), shape.err());
        assertTrue(shape.err().contains("--shape") && shape.err().contains("llama-3.2-1b"), shape.err());
        Run dtype = demoModel("--shape", "demo", "--dtype", "q4", "--out", root.resolve("y").toString());
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, dtype.status());
        assertTrue(dtype.err().contains("--dtype") && dtype.err().contains("q4"), dtype.err());
        Path occupied = Files.createDirectories(root.resolve("occupied"));
        Files.writeString(occupied.resolve("notes.txt"), "mine");
        Run taken = demoModel("--shape", "demo", "--out", occupied.toString());
        assertEquals(GraphlaneCli.EXIT_USER_ERROR, taken.status());
        assertTrue(taken.err().contains(occupied.toString()), taken.err());
        assertFalse(taken.err().contains("Exception"), taken.err());
        assertEquals("mine", Files.readString(occupied.resolve("notes.txt")), "nothing of the user's is touched");
    }
}
