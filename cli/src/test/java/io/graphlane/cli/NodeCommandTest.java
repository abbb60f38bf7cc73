package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** graphlane node refuses bad options with one line naming the option, before any node starts. */
class NodeCommandTest {
    private static String[] run(String... args) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter err = new StringWriter();
        cli.setErr(new PrintWriter(err));
        cli.setOut(new PrintWriter(new StringWriter()));
        int status = cli.execute(args);
        return new String[] {String.valueOf(status), err.toString()};
    }

    @Test
    void theLocalProfileNeedsARankInRange() {
        String[] noRank = run("node", "--profile", "local", "--nodes", "3");
        assertEquals("2", noRank[0]);
        assertTrue(noRank[1].contains("--rank is required by the local profile"), noRank[1]);
        String[] outOfRange = run("node", "--rank", "3", "--nodes", "3");
        assertEquals("2", outOfRange[0]);
        assertTrue(outOfRange[1].contains("--rank must be in [0, 3)"), outOfRange[1]);
    }

    @Test
    void unknownProfilesAndZeroStagesAreRefusedByName() {
        String[] profile = run("node", "--profile", "mesh", "--rank", "0");
        assertEquals("2", profile[0]);
        assertTrue(profile[1].contains("unknown cluster profile 'mesh'"), profile[1]);
        String[] stages = run("node", "--rank", "0", "--stages", "0");
        assertEquals("2", stages[0]);
        assertTrue(stages[1].contains("--stages must be >= 1"), stages[1]);
    }

    @Test
    void staticProfileNeedsASeed() {
        String[] noSeed = run("node", "--profile", "static", "--nodes", "2");
        assertEquals("2", noSeed[0]);
        assertTrue(noSeed[1].contains("--seed"), noSeed[1]);
    }

    @Test
    void serveNeedsAModelAndMoreStagesThanLayersAreRefused() throws Exception {
        String[] serveOnly = run("node", "--rank", "0", "--serve");
        assertEquals("2", serveOnly[0]);
        assertTrue(serveOnly[1].contains("--serve needs --model"), serveOnly[1]);
        java.nio.file.Path dir = java.nio.file.Path.of(getClass().getResource("/tiny-llama/config.json").toURI()).getParent();
        String[] tooMany = run("node", "--rank", "0", "--model", dir.toString(), "--stages", "5");
        assertEquals("2", tooMany[0]);
        assertTrue(tooMany[1].contains("--stages 5 is more than the model's 4 layers"), tooMany[1]);
    }
}
