package io.graphlane.inference.chat;

import com.hubspot.jinjava.Jinjava;
import com.hubspot.jinjava.interpret.JinjavaInterpreter;
import com.hubspot.jinjava.interpret.RenderResult;
import com.hubspot.jinjava.interpret.TemplateError;
import com.hubspot.jinjava.lib.fn.ELFunctionDefinition;
import com.hubspot.jinjava.lib.fn.Functions;
import io.graphlane.core.GraphlaneException;
import io.graphlane.inference.tokenizer.TokenizerConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A model's chat template: its {@code chat_template.jinja}, else the Jinja {@code chat_template} of its
 * {@code tokenizer_config.json} (see {@link TokenizerConfig}), rendered as Hugging
 * Face's {@code apply_chat_template} renders it ({@code trim_blocks}, {@code lstrip_blocks}, the variables
 * {@code messages}, {@code add_generation_prompt}, {@code bos_token}, {@code eos_token} and a {@code raise_exception}
 * function). Rendering is on Jinjava; thread-safe.
 *
 * <p>The template comes with the model and renders text clients send, so a render is bounded by its
 * {@link ChatTemplateLimits} (output size, time, range length, list and map size, macro depth): a render past one is
 * refused naming it. Templates load nothing: {@code include}, {@code import}, {@code from} and {@code extends} are
 * refused, and no file or classpath resource is readable. Java string methods that build text without a bound or run
 * a regular expression (none of them a Python string method) cannot be called; the filters and the {@code replace}
 * method that can build a result far larger than their input are checked before they run.
 */
public final class ChatTemplate {
    /** The file that holds a model's chat template and special-token texts. */
    public static final String FILE_NAME = "tokenizer_config.json";

    private final String template;
    private final String bosToken;
    private final String eosToken;
    private final ChatTemplateLimits limits;
    private final Jinjava jinjava;

    /** A template with the texts its {@code bos_token} and {@code eos_token} variables hold, within the default limits. */
    public ChatTemplate(String template, String bosToken, String eosToken) {
        this(template, bosToken, eosToken, ChatTemplateLimits.defaults());
    }

    /** A template with the texts its {@code bos_token} and {@code eos_token} variables hold, rendered within {@code limits}. */
    public ChatTemplate(String template, String bosToken, String eosToken, ChatTemplateLimits limits) {
        this.template = Objects.requireNonNull(template, "template");
        this.bosToken = Objects.requireNonNull(bosToken, "bosToken");
        this.eosToken = Objects.requireNonNull(eosToken, "eosToken");
        this.limits = Objects.requireNonNull(limits, "limits");
        this.jinjava = new Jinjava(RenderGuards.globalConfig(limits));
        RenderGuards.install(jinjava);
        jinjava.getGlobalContext().registerFunction(
                new ELFunctionDefinition("", "raise_exception", ChatTemplate.class, "raiseException", String.class));
    }

    /** This template rendered within {@code limits} instead. */
    public ChatTemplate withLimits(ChatTemplateLimits limits) {
        return new ChatTemplate(template, bosToken, eosToken, limits);
    }

    /** The limits each render is held to. */
    public ChatTemplateLimits limits() {
        return limits;
    }

    /**
     * The chat template of model directory {@code dir}, as {@link TokenizerConfig} finds it: {@code chat_template.jinja}
     * when the directory has one, else tokenizer_config.json's {@code chat_template} (a string, or the one named
     * {@code default} of a list of named templates); empty when neither has one.
     *
     * @throws GraphlaneException naming the file and field if they are unreadable or of the wrong kind
     */
    public static Optional<ChatTemplate> load(Path dir) {
        return load(TokenizerConfig.read(dir));
    }

    /** The chat template {@code config} holds, with its BOS and EOS texts; empty when it has none. */
    public static Optional<ChatTemplate> load(TokenizerConfig config) {
        return config.chatTemplate().map(t -> new ChatTemplate(t, config.bosToken(), config.eosToken()));
    }

    /**
     * The prompt for {@code messages}, ending with the assistant's turn when {@code addGenerationPrompt}.
     *
     * @throws ChatTemplateException with the template's own message when it calls {@code raise_exception}, naming the
     *                               limit a render went past (time, output, range, list or map size, macro depth,
     *                               nesting, a tag that loads another template), else naming the template's line and
     *                               error
     */
    public String render(List<ChatMessage> messages, boolean addGenerationPrompt) {
        List<Map<String, Object>> list = new ArrayList<>(messages.size());
        for (ChatMessage m : messages) {
            Map<String, Object> message = new LinkedHashMap<>();
            message.put("role", m.role());
            message.put("content", m.content());
            list.add(message);
        }
        Map<String, Object> context = new HashMap<>();
        context.put("messages", list);
        context.put("add_generation_prompt", addGenerationPrompt);
        context.put("bos_token", bosToken);
        context.put("eos_token", eosToken);
        RenderResult result;
        try {
            result = jinjava.renderForResult(template, context, RenderGuards.config(limits));
        } catch (StackOverflowError e) {
            throw new ChatTemplateException(RenderGuards.nestsTooDeeply());
        }
        // A limit is reported whatever its severity: the engine only warns when it cuts a join or stops a macro's
        // recursion, and renders on without what it cut.
        for (TemplateError error : result.getErrors()) {
            String limit = RenderGuards.limitHit(error, limits);
            if (limit != null) {
                throw new ChatTemplateException(limit);
            }
        }
        for (TemplateError error : result.getErrors()) {
            if (error.getSeverity() == TemplateError.ErrorType.FATAL) {
                throw failure(error);
            }
        }
        return result.getOutput();
    }

    private static ChatTemplateException failure(TemplateError error) {
        for (Throwable t = error.getException(); t != null; t = t.getCause()) {
            if (t instanceof Raised raised) {
                return new ChatTemplateException(raised.getMessage());
            }
        }
        return new ChatTemplateException("the model's chat template failed at line " + error.getLineno() + ": " + error.getMessage());
    }

    /** The template's {@code bos_token}. */
    public String bosToken() {
        return bosToken;
    }

    /** The template's {@code eos_token}. */
    public String eosToken() {
        return eosToken;
    }

    /**
     * The template function {@code raise_exception(message)}: refuses the conversation with {@code message}. Public
     * only so the template engine can call it.
     */
    public static String raiseException(String message) {
        throw new Raised(message);
    }

    /**
     * The template function {@code range(stop)} or {@code range(start, stop[, step])}: the engine's, but refused when
     * it would hold more numbers than the render's range limit (the engine would silently cut it short, which could
     * drop messages from a conversation the template walks by index). Public only so the template engine can call it.
     */
    public static List<Integer> range(Object first, Object... rest) {
        double start = 0;
        double stop;
        double step = 1;
        if (rest.length == 0) {
            stop = RenderGuards.number(first, 0);
        } else {
            start = RenderGuards.number(first, 0);
            stop = RenderGuards.number(rest[0], 0);
            step = rest.length > 1 ? RenderGuards.number(rest[1], 1) : 1;
        }
        double length = step == 0 ? 0 : Math.max(0, Math.ceil((stop - start) / step));
        int limit = JinjavaInterpreter.getCurrent().getConfig().getRangeLimit();
        if (length > limit) {
            throw new RenderGuards.LimitExceeded("the model's chat template asks for a range of " + (long) length
                    + " numbers, more than its limit of " + limit);
        }
        return Functions.range(first, rest);
    }

    /** What {@link #raiseException} throws through the template engine, found again in its error's causes. */
    private static final class Raised extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Raised(String message) {
            super(message, null, false, false);
        }
    }
}
