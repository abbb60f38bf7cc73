package io.graphlane.inference.chat;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.JinjavaConfig;
import com.hubspot.jinjava.el.JinjavaInterpreterResolver;
import com.hubspot.jinjava.el.JinjavaProcessors;
import com.hubspot.jinjava.interpret.CollectionTooBigException;
import com.hubspot.jinjava.interpret.Context;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.MacroTagCycleException;
import com.hubspot.jinjava.interpret.OutputTooBigException;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.filter.Filter;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.loader.ResourceNotFoundException;
import java.beans.FeatureDescriptor;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import jinjava.javax.el.ELContext;
import jinjava.javax.el.ELResolver;

/**
 * The bounds a {@link ChatTemplate} renders within, on Jinjava: what its configuration offers (output and string size,
 * list and map size, range length, macro recursion depth, tags switched off), what it does not and is added here (a
 * limit on a render's CPU time checked before every node, a {@code range} that refuses rather than cuts short, filters and string
 * methods that could build a huge result in one call checked before they run, no file or classpath loading), and the
 * translation of what a render hit into the message a client reads.
 */
final class RenderGuards {
    /** Tags that load other templates: a chat template must stand alone. */
    static final Set<String> LOADING_TAGS = Set.of("include", "import", "from", "extends");
    /**
     * Java methods of strings a template could otherwise call that build text without a bound, or run a regular
     * expression: none is a Python string method, so no template written for jinja2 calls them.
     */
    static final Set<String> REFUSED_METHODS = Set.of("repeat", "formatted", "indent", "concat", "replaceAll", "replaceFirst",
            "matches", "format", "join");
    /** Filters whose result can be far larger than their input, sized by an argument: checked before they run. */
    private static final Set<String> SIZED_FILTERS = Set.of("center", "indent", "batch");
    /** A width or precision of a {@code format} specifier. */
    private static final Pattern FORMAT_SIZES = Pattern.compile("%(?:\\d+\\$)?[-#+ 0,(<]*(\\d+)?(?:\\.(\\d+))?");

    private RenderGuards() {
    }

    /** What a render refused; found again in the causes of the engine's error. */
    static final class LimitExceeded extends RuntimeException {
        private static final long serialVersionUID = 1L;

        LimitExceeded(String message) {
            super(message, null, false, false);
        }
    }

    /** Swaps what the engine offers for the bounded versions: no template loading, sized filters checked, a strict range. */
    static void install(Jinjava jinjava) {
        jinjava.setResourceLocator((name, encoding, interpreter) -> {
            throw new ResourceNotFoundException("a chat template cannot load '" + name + "'");
        });
        var context = jinjava.getGlobalContext();
        for (String name : SIZED_FILTERS) {
            context.registerFilter(new SizeCheckedFilter(context.getFilter(name), false));
        }
        context.registerFilter(new SizeCheckedFilter(context.getFilter("format"), true));
        context.registerFunction(new ELFunctionDefinition("", "range", ChatTemplate.class, "range", Object.class, Object[].class));
    }

    /** The engine's configuration within {@code limits}, without a clock: the one its global context is made with. */
    static JinjavaConfig globalConfig(ChatTemplateLimits limits) {
        return builder(limits).build();
    }

    /**
     * The engine's configuration for one render within {@code limits}, on the calling thread, starting now: before
     * each node it renders, the render is stopped once the thread has used the render's CPU time. The thread's CPU
     * clock is read only once as much wall time has passed, which it never precedes.
     */
    static JinjavaConfig config(ChatTemplateLimits limits) {
        long budget = limits.renderCpuTime().toNanos();
        long wallStart = System.nanoTime();
        long cpuStart = threadCpuTime();
        return builder(limits)
                .withProcessors(JinjavaProcessors.newBuilder().withNodePreProcessor((node, interpreter) -> {
                    long wall = System.nanoTime() - wallStart;
                    if (wall > budget && (cpuStart < 0 ? wall : threadCpuTime() - cpuStart) > budget) {
                        throw new LimitExceeded("rendering the model's chat template took more than its limit of "
                                + limits.renderCpuTime().toMillis() + " ms of CPU time (at line " + node.getLineNumber() + ")");
                    }
                }).build())
                .build();
    }

    /** The calling thread's CPU time in nanoseconds, or -1 where the JVM does not measure it. */
    private static long threadCpuTime() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        return threads.isCurrentThreadCpuTimeSupported() ? threads.getCurrentThreadCpuTime() : -1;
    }

    private static JinjavaConfig.Builder builder(ChatTemplateLimits limits) {
        return JinjavaConfig.newBuilder()
                .withTrimBlocks(true)
                .withLstripBlocks(true)
                // Jinjava would by default render template syntax found in a value's output (nested interpretation):
                // jinja2 never does, and message content is the caller's text, so it stays text.
                .withNestedInterpretationEnabled(false)
                .withMaxOutputSize(limits.maxOutputChars())
                .withMaxStringLength(limits.maxOutputChars())
                .withMaxListSize(limits.maxCollectionSize())
                .withMaxMapSize(limits.maxCollectionSize())
                .withRangeLimit(limits.maxRange())
                .withEnableRecursiveMacroCalls(true)
                .withMaxMacroRecursionDepth(limits.maxMacroDepth())
                .withDisabled(Map.of(Context.Library.TAG, LOADING_TAGS))
                .withRestrictedMethods(REFUSED_METHODS)
                .withElResolver(new BoundedStringMethods(JinjavaInterpreterResolver.DEFAULT_RESOLVER_READ_ONLY));
    }

    /** The message of the limit {@code error} shows the render hit, or null if it is about something else. */
    static String limitHit(TemplateError error, ChatTemplateLimits limits) {
        for (Throwable t = error.getException(); t != null; t = t.getCause()) {
            if (t instanceof LimitExceeded exceeded) {
                return exceeded.getMessage();
            }
            if (t instanceof OutputTooBigException) {
                return outputLimit(limits);
            }
            if (t instanceof CollectionTooBigException) {
                return collectionLimit(limits);
            }
            if (t instanceof MacroTagCycleException) {
                return "the model's chat template calls its macros deeper than its limit of " + limits.maxMacroDepth() + " nested calls";
            }
            if (t instanceof StackOverflowError) {
                return nestsTooDeeply();
            }
        }
        return switch (error.getReason()) {
            case OUTPUT_TOO_BIG -> outputLimit(limits);
            case COLLECTION_TOO_BIG -> collectionLimit(limits);
            case DISABLED -> "the model's chat template uses " + quoted(error.getMessage()) + " at line " + error.getLineno()
                    + ": a chat template must stand alone; " + String.join(", ", LOADING_TAGS.stream().sorted().toList())
                    + " are refused";
            default -> null;
        };
    }

    static String nestsTooDeeply() {
        return "the model's chat template nests its blocks or calls too deeply to render";
    }

    private static String outputLimit(ChatTemplateLimits limits) {
        return "the model's chat template built a text longer than its limit of " + limits.maxOutputChars() + " characters";
    }

    private static String collectionLimit(ChatTemplateLimits limits) {
        return "the model's chat template built or read a list or map longer than its limit of " + limits.maxCollectionSize() + " items";
    }

    private static String quoted(String message) {
        Matcher m = Pattern.compile("'([^']+)'").matcher(String.valueOf(message));
        return m.find() ? "'" + m.group(1) + "'" : "a tag that loads another template";
    }

    /** Refuses, before it is built, a result of more than the render's string limit. */
    static void checkSize(long size, String what) {
        long limit = JinjavaInterpreter.getCurrent().getConfig().getMaxStringLength();
        if (size > limit) {
            throw new LimitExceeded("the model's chat template asks " + what + " for " + size + " characters, more than its limit of "
                    + limit + " characters");
        }
    }

    /** The number an argument stands for, or {@code otherwise} if it is not one. */
    static long number(Object arg, long otherwise) {
        if (arg instanceof Number n) {
            return n.longValue();
        }
        if (arg == null) {
            return otherwise;
        }
        String s = arg.toString().trim();
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException notLong) {
            try {
                double d = Double.parseDouble(s);
                return Double.isNaN(d) ? otherwise : (long) d;
            } catch (NumberFormatException notNumber) {
                return otherwise;
            }
        }
    }

    /**
     * A filter whose result can be far larger than its input: {@code center}, {@code indent} and {@code batch} by
     * their width or size argument, {@code format} by the widths and precisions of its specifiers. Checked against
     * the render's string (or, for batch, list) limit before the filter runs, so no single call allocates past it.
     */
    private record SizeCheckedFilter(Filter inner, boolean sizedByFormat) implements Filter {
        @Override
        public String getName() {
            return inner.getName();
        }

        @Override
        public boolean preserveSafeString() {
            return inner.preserveSafeString();
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, String... args) {
            check(var, args, Map.of());
            return inner.filter(var, interpreter, args);
        }

        @Override
        public Object filter(Object var, JinjavaInterpreter interpreter, Object[] args, Map<String, Object> kwargs) {
            check(var, args, kwargs);
            return inner.filter(var, interpreter, args, kwargs);
        }

        private void check(Object var, Object[] args, Map<String, Object> kwargs) {
            String text = var == null ? "" : var.toString();
            if (sizedByFormat) {
                Matcher m = FORMAT_SIZES.matcher(text);
                while (m.find()) {
                    for (int g = 1; g <= 2; g++) {
                        if (m.group(g) != null) {
                            checkSize(m.group(g).length() > 12 ? Long.MAX_VALUE : text.length() + Long.parseLong(m.group(g)), "of format");
                        }
                    }
                }
                return;
            }
            long largest = 0;
            for (Object a : args) {
                largest = Math.max(largest, number(a, 0));
            }
            for (Object a : kwargs.values()) {
                largest = Math.max(largest, number(a, 0));
            }
            switch (getName()) {
                case "indent" -> checkSize(text.length() + saturatedProduct(largest, lines(text)), "of indent");
                case "batch" -> {
                    long limit = JinjavaInterpreter.getCurrent().getConfig().getMaxListSize();
                    if (largest > limit) {
                        throw new LimitExceeded("the model's chat template asks batch for rows of " + largest
                                + " items, more than its limit of " + limit + " items");
                    }
                }
                default -> checkSize(Math.max(largest, text.length()), "of " + getName());
            }
        }

        private static long lines(String text) {
            return text.chars().filter(c -> c == '\n').count() + 1;
        }
    }

    static long saturatedProduct(long a, long b) {
        long product = a * b;
        return a != 0 && (product / a != b || product < 0) ? Long.MAX_VALUE : product;
    }

    /**
     * The engine's read-only resolver, with a string's {@code replace} (a Python method templates use) checked before
     * it runs: the result's length is known from the matches, and one call must not build past the string limit.
     */
    private static final class BoundedStringMethods extends ELResolver {
        private final ELResolver inner;

        BoundedStringMethods(ELResolver inner) {
            this.inner = inner;
        }

        @Override
        public Object invoke(ELContext context, Object base, Object method, Class<?>[] paramTypes, Object[] params) {
            if (base instanceof String s && "replace".equals(String.valueOf(method)) && params != null && params.length == 2
                    && params[0] instanceof CharSequence target && params[1] instanceof CharSequence replacement) {
                long grows = replacement.length() - target.length();
                if (grows > 0) {
                    checkSize(s.length() + saturatedProduct(occurrences(s, target.toString()), grows), "of replace");
                }
            }
            return inner.invoke(context, base, method, paramTypes, params);
        }

        private static long occurrences(String s, String target) {
            if (target.isEmpty()) {
                return s.length() + 1L;
            }
            long n = 0;
            for (int at = s.indexOf(target); at >= 0; at = s.indexOf(target, at + target.length())) {
                n++;
            }
            return n;
        }

        @Override
        public Class<?> getCommonPropertyType(ELContext context, Object base) {
            return inner.getCommonPropertyType(context, base);
        }

        @Override
        public Iterator<FeatureDescriptor> getFeatureDescriptors(ELContext context, Object base) {
            return inner.getFeatureDescriptors(context, base);
        }

        @Override
        public Class<?> getType(ELContext context, Object base, Object property) {
            return inner.getType(context, base, property);
        }

        @Override
        public Object getValue(ELContext context, Object base, Object property) {
            return inner.getValue(context, base, property);
        }

        @Override
        public boolean isReadOnly(ELContext context, Object base, Object property) {
            return inner.isReadOnly(context, base, property);
        }

        @Override
        public void setValue(ELContext context, Object base, Object property, Object value) {
            inner.setValue(context, base, property, value);
        }
    }
}
