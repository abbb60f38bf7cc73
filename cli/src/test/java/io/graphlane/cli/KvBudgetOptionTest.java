package io.graphlane.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** --kv-budget takes auto or a size with a unit, and a bad value ends with one line naming the option, before anything starts. */
class KvBudgetOptionTest {
    @Test
    void sizesReadAsHoconReadsThemAndAutoAsTheDefault() {
        assertEquals(OptionalLong.empty(), KvBudgetOption.parse("--kv-budget", "auto"));
        assertEquals(OptionalLong.of(512L << 20), KvBudgetOption.parse("--kv-budget", "512m"));
        assertEquals(OptionalLong.of(4L << 30), KvBudgetOption.parse("--kv-budget", "4g"));
        assertEquals(OptionalLong.of(3L << 29), KvBudgetOption.parse("--kv-budget", "1.5GiB"));
        assertEquals(OptionalLong.of(123456), KvBudgetOption.parse("--kv-budget", "123456"));
    }

    @Test
    void aBadBudgetIsRefusedNamingTheOptionByServeAndNode() {
        String[][] commands = {{"serve", "--kv-budget", "lots"}, {"node", "--rank", "0", "--kv-budget", "lots"}};
        for (String[] command : commands) {
            String[] result = NodeCommandTest.run(command);
            assertEquals("2", result[0], command[0]);
            assertTrue(result[1].contains("--kv-budget must be auto or a size in bytes with an optional unit (such as 512m, 4g"
                    + " or 1.5GiB), got 'lots'"), command[0] + ": " + result[1]);
        }
        String[] zero = NodeCommandTest.run("serve", "--kv-budget", "0");
        assertEquals("2", zero[0]);
        assertTrue(zero[1].contains("--kv-budget must be a positive size, got '0'"), zero[1]);
        String help = GraphlaneCli.commandLine().getSubcommands().get("serve").getUsageMessage();
        assertTrue(help.contains("--kv-budget=auto|SIZE") && help.contains("(default auto)"), help);
    }
}
