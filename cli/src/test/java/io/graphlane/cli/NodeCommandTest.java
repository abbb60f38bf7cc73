package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.cluster.ClusterProfile;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** graphlane node refuses bad options with one line naming the option, before any node starts. */
class NodeCommandTest {
    /** Runs the command line {@code args}: its exit status, then what it wrote to stderr. */
    static String[] run(String... args) {
        CommandLine cli = GraphlaneCli.commandLine();
        StringWriter err = new StringWriter();
        cli.setErr(new PrintWriter(err));
        cli.setOut(new PrintWriter(new StringWriter()));
        int status = cli.execute(args);
        return new String[] {String.valueOf(status), err.toString()};
    }

    @Test
    void theHttpHostIsItsOwnOptionDefaultingToLoopbackAndListedInHelp() {
        NodeCommand defaults = new NodeCommand();
        new CommandLine(defaults).parseArgs("--profile", "static", "--host", "10.1.2.3", "--seed", "10.1.2.4:2551");
        assertEquals("127.0.0.1", defaults.httpHost, "the serving address does not follow --host");
        assertEquals("10.1.2.3", defaults.host);
        NodeCommand given = new NodeCommand();
        new CommandLine(given).parseArgs("--rank", "0", "--http-host", "0.0.0.0");
        assertEquals("0.0.0.0", given.httpHost);
        assertEquals("127.0.0.1", given.host);
        String help = GraphlaneCli.commandLine().getSubcommands().get("node").getUsageMessage();
        assertTrue(help.contains("--http-host=HOST") && help.contains("default: 127.0.0.1"), help);
        String[] unresolvable = run("node", "--rank", "0", "--http-host", "no-such-host.invalid");
        assertEquals("2", unresolvable[0]);
        assertTrue(unresolvable[1].contains("--http-host: cannot resolve 'no-such-host.invalid'"), unresolvable[1]);
    }

    @Test
    void coresAreShareOfTheHostWithTheLocalProfileAndAsGivenOtherwise() {
        assertEquals(2, NodeCommand.coresFor(ClusterProfile.LOCAL, 4, null, 8), "four local nodes share 8 cores");
        assertEquals(1, NodeCommand.coresFor(ClusterProfile.LOCAL, 4, null, 2), "never below one core");
        assertEquals(8, NodeCommand.coresFor(ClusterProfile.STATIC, 4, null, 8), "a static node may be alone on its host");
        assertEquals(3, NodeCommand.coresFor(ClusterProfile.STATIC, 4, 3, 8));
        assertEquals(8, NodeCommand.coresFor(ClusterProfile.LOCAL, 4, 16, 8), "at most the machine's cores");
        String[] zero = run("node", "--rank", "0", "--cores", "0");
        assertEquals("2", zero[0]);
        assertTrue(zero[1].contains("--cores must be >= 1, got 0"), zero[1]);
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

    @Test
    void tensorParallelNeedsAModelOneShardPerNodeAndDividingHeads() throws Exception {
        String[] noModel = run("node", "--rank", "0", "--nodes", "4", "--stages", "2", "--tensor-parallel", "2");
        assertEquals("2", noModel[0]);
        assertTrue(noModel[1].contains("--tensor-parallel 2 needs --model"), noModel[1]);
        java.nio.file.Path dir = java.nio.file.Path.of(getClass().getResource("/tiny-llama/config.json").toURI()).getParent();
        String[] wrongNodes = run("node", "--rank", "0", "--nodes", "3", "--stages", "2", "--tensor-parallel", "2", "--model",
                dir.toString());
        assertEquals("2", wrongNodes[0]);
        assertTrue(wrongNodes[1].contains("--stages 2 x --tensor-parallel 2 needs --nodes 4") && wrongNodes[1].contains("got --nodes 3"),
                wrongNodes[1]);
        String[] kvHeads = run("node", "--rank", "0", "--nodes", "4", "--stages", "1", "--tensor-parallel", "4", "--model",
                dir.toString());
        assertEquals("2", kvHeads[0]);
        assertTrue(kvHeads[1].contains("num_key_value_heads = 2"), kvHeads[1]);
        assertEquals(1, kvHeads[1].strip().lines().count(), "one line, no stack trace: " + kvHeads[1]);
    }

    @Test
    void badServerLimitsAreRefusedByNameByNodeAndServe() {
        for (String[] command : new String[][] {{"node", "--rank", "0"}, {"serve"}}) {
            String[] drain = run(with(command, "--drain-seconds", "-1"));
            assertEquals("2", drain[0], drain[1]);
            assertTrue(drain[1].contains("--drain-seconds must be >= 0, got -1"), drain[1]);
            String[] body = run(with(command, "--max-body-bytes", "0"));
            assertEquals("2", body[0], body[1]);
            assertTrue(body[1].contains("--max-body-bytes must be >= 1, got 0"), body[1]);
            String[] headerRead = run(with(command, "--header-read-timeout-seconds", "0"));
            assertEquals("2", headerRead[0], headerRead[1]);
            assertTrue(headerRead[1].contains("--header-read-timeout-seconds must be >= 1, got 0"), headerRead[1]);
            String[] idle = run(with(command, "--idle-timeout-seconds", "-5"));
            assertEquals("2", idle[0], idle[1]);
            assertTrue(idle[1].contains("--idle-timeout-seconds must be >= 1, got -5"), idle[1]);
            String[] perClient = run(with(command, "--max-connections", "100", "--max-connections-per-client", "200"));
            assertEquals("2", perClient[0], perClient[1]);
            assertTrue(perClient[1].contains("--max-connections-per-client must be in [1, 100] (--max-connections), got 200"), perClient[1]);
            assertEquals(1, perClient[1].strip().lines().count(), "one line, no stack trace: " + perClient[1]);
        }
    }

    @Test
    void theConnectionLimitsAreOptionsWithTheirDefaultsInHelp() {
        for (String command : new String[] {"node", "serve"}) {
            String help = GraphlaneCli.commandLine().getSubcommands().get(command).getUsageMessage();
            for (String option : new String[] {"--header-read-timeout-seconds=S", "(default 10)", "--idle-timeout-seconds=S", "(default 60)",
                    "--max-connections-per-client=N", "(default 256)", "--max-connections=N", "(default 1024)"}) {
                assertTrue(help.replaceAll("\\s+", " ").contains(option), command + " help names " + option + ": " + help);
            }
        }
    }

    private static String[] with(String[] command, String... more) {
        String[] all = java.util.Arrays.copyOf(command, command.length + more.length);
        System.arraycopy(more, 0, all, command.length, more.length);
        return all;
    }
}
