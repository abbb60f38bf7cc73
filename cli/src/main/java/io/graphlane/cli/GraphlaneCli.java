package io.graphlane.cli;

import io.graphlane.core.GraphlaneException;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The {@code graphlane} command. User mistakes (bad options, bad files, refused input)
 * end with exit status 2 and one line on stderr; {@code --debug} adds the stack trace.
 */
@Command(name = "graphlane",
        mixinStandardHelpOptions = true,
        versionProvider = GraphlaneCli.Version.class,
        description = "An actor-based scheduler for graph lane execution on the JVM.",
        subcommands = {
            RunCommand.class,
            ServeCommand.class,
            LogitsCommand.class,
            BenchCommand.class,
            InspectCommand.class,
            DemoModelCommand.class,
            NodeCommand.class,
            TraceHtmlCommand.class,
            SoakCommand.class,
            io.graphlane.cli.attack.AttackCommand.class,
            CommandLine.HelpCommand.class,
        })
public final class GraphlaneCli implements Runnable {

    /** Exit status for a user mistake: bad option, bad input file, refused request. */
    public static final int EXIT_USER_ERROR = 2;

    @Option(names = "--debug", scope = CommandLine.ScopeType.INHERIT,
            description = "Show stack traces of errors.")
    boolean debug;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public static void main(String[] args) {
        // Initialize logging before any library thread logs, so nothing is queued and replayed at start-up.
        org.slf4j.LoggerFactory.getILoggerFactory();
        System.exit(execute(args));
    }

    /** Runs the command line and returns its exit status (used by tests, which must not exit the JVM). */
    public static int execute(String... args) {
        return commandLine().execute(args);
    }

    /** The configured command line, for callers that redirect its output. */
    public static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new GraphlaneCli());
        cli.setExecutionExceptionHandler(GraphlaneCli::handleError);
        cli.setParameterExceptionHandler((ex, args) -> {
            PrintWriter err = ex.getCommandLine().getErr();
            err.println("graphlane: " + ex.getMessage());
            err.println("Try '" + ex.getCommandLine().getCommandSpec().qualifiedName() + " --help' for usage.");
            err.flush();
            return EXIT_USER_ERROR;
        });
        return cli;
    }

    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    private static int handleError(Exception ex, CommandLine cli, CommandLine.ParseResult parsed) {
        PrintWriter err = cli.getErr();
        boolean debug = parsed.hasMatchedOption("--debug")
                || (parsed.subcommand() != null && anyMatched(parsed, "--debug"));
        if (isUserError(ex)) {
            err.println("graphlane: " + ex.getMessage());
            if (debug) {
                ex.printStackTrace(err);
            }
            err.flush();
            return EXIT_USER_ERROR;
        }
        err.println("graphlane: internal error: " + ex);
        ex.printStackTrace(err);
        err.flush();
        return 1;
    }

    private static boolean anyMatched(CommandLine.ParseResult parsed, String option) {
        for (CommandLine.ParseResult p = parsed; p != null; p = p.subcommand()) {
            if (p.hasMatchedOption(option)) {
                return true;
            }
        }
        return false;
    }

    /** Errors a user can act on: graphlane's own errors, bad arguments, unreadable files. */
    static boolean isUserError(Throwable ex) {
        return ex instanceof GraphlaneException
                || ex instanceof IllegalArgumentException
                || ex instanceof java.io.IOException
                || ex instanceof java.io.UncheckedIOException;
    }

    /** Reports the version from the jar manifest. */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String v = GraphlaneCli.class.getPackage().getImplementationVersion();
            return new String[] {"graphlane " + (v == null ? "(development build)" : v)};
        }
    }
}
