package io.graphlane.inference.chat;

import java.time.Duration;
import java.util.Objects;

/**
 * What one render of a chat template may take. A template comes with the model, from its tokenizer_config.json, and
 * runs on text clients send: these bound what a template (or a conversation fed to it) can make a render cost. A
 * render past any of them is refused with a {@link ChatTemplateException} naming the limit.
 *
 * @param maxOutputChars    the longest output, and the longest string or list joined while rendering, in characters
 * @param renderCpuTime     the CPU time a render may use; checked before each tag, expression and text of the template
 *                          is rendered, so a single expression (a filter over the largest list allowed) runs to its
 *                          end. CPU time of the rendering thread, not wall time: a render waiting for a core on a busy
 *                          machine is not refused for it
 * @param maxRange          the most numbers a {@code range(...)} may hold (a longer one is refused, not cut short)
 * @param maxCollectionSize the most items of a list or map the template reads or builds, the conversation included
 * @param maxMacroDepth     how deeply macros may call each other or themselves (the engine counts a macro called
 *                          inside a loop of a macro twice)
 */
public record ChatTemplateLimits(long maxOutputChars, Duration renderCpuTime, int maxRange, int maxCollectionSize, int maxMacroDepth) {
    /** 8 Mi characters: the output of a conversation the default request body limit (8 MiB) can carry. */
    public static final long DEFAULT_MAX_OUTPUT_CHARS = 8L * 1024 * 1024;
    /**
     * Five seconds: real templates render a conversation of thousands of messages in well under a second once the
     * engine is warm, and within one or two on a cold JVM.
     */
    public static final Duration DEFAULT_RENDER_CPU_TIME = Duration.ofSeconds(5);
    /** A million: more than the messages an 8 MiB request body can hold. */
    public static final int DEFAULT_MAX_RANGE = 1_000_000;
    /** A million, as for ranges. */
    public static final int DEFAULT_MAX_COLLECTION_SIZE = 1_000_000;
    /** 100: about 50 levels of a recursive macro called inside a loop, well within a thread's stack. */
    public static final int DEFAULT_MAX_MACRO_DEPTH = 100;

    public ChatTemplateLimits {
        Objects.requireNonNull(renderCpuTime, "renderCpuTime");
        if (maxOutputChars < 1) {
            throw new IllegalArgumentException("the chat template output limit must be >= 1 character, got " + maxOutputChars);
        }
        if (renderCpuTime.isNegative() || renderCpuTime.isZero()) {
            throw new IllegalArgumentException("the chat template render time must be positive, got " + renderCpuTime.toMillis() + " ms");
        }
        if (maxRange < 1 || maxCollectionSize < 1 || maxMacroDepth < 1) {
            throw new IllegalArgumentException("the chat template's range, collection and macro depth limits must be >= 1, got "
                    + maxRange + ", " + maxCollectionSize + " and " + maxMacroDepth);
        }
    }

    /** Every limit at its default. */
    public static ChatTemplateLimits defaults() {
        return new ChatTemplateLimits(DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_RENDER_CPU_TIME, DEFAULT_MAX_RANGE, DEFAULT_MAX_COLLECTION_SIZE,
                DEFAULT_MAX_MACRO_DEPTH);
    }

    public ChatTemplateLimits withMaxOutputChars(long chars) {
        return new ChatTemplateLimits(chars, renderCpuTime, maxRange, maxCollectionSize, maxMacroDepth);
    }

    public ChatTemplateLimits withRenderCpuTime(Duration timeout) {
        return new ChatTemplateLimits(maxOutputChars, timeout, maxRange, maxCollectionSize, maxMacroDepth);
    }
}
