package io.graphlane.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.inference.api.TokenCodec;
import io.graphlane.inference.chat.ChatTemplate;
import io.graphlane.inference.chat.ChatTemplateException;
import io.graphlane.inference.chat.ChatTemplateLimits;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code POST /v1/chat/completions}: the messages are rendered with the model's chat template, the rendered prompt
 * is tokenized as written (special-token text becomes its token, nothing is prepended), and the assistant's reply is
 * generated until an end-of-sequence id or the token limit. The reply's content leaves special tokens out; its
 * usage counts every generated id, the end-of-sequence one included, as {@code /v1/completions} does. Each of the
 * {@code n} choices is a {@link CompletionChoice} decoding with the content decoder, so {@code stop},
 * {@code stop_token_ids} and log-probabilities (rendered in chat's shape) work as for completions; a non-streamed
 * reply is cancelled with its connection or its request timeout, as a text completion is, and every reply holds a
 * drain ticket until it ended. A request is prepared ({@link #prepare}: read, checked, rendered within the server's
 * chat template limits, tokenized) on a preparation thread, then started on the dispatcher ({@link #start}).
 */
final class ChatCompletions extends AllDirectives {
    private final OpenAiServer server;
    private final TextGenerator generator;
    private final ObjectMapper json;
    private final PromptBounds bounds;
    private final ChatTemplateLimits templateLimits;
    private final AtomicLong ids = new AtomicLong();
    /** The generator's template and the copy of it rendered within {@link #templateLimits}, made once. */
    private final AtomicReference<LimitedTemplate> limited = new AtomicReference<>();

    ChatCompletions(OpenAiServer server, TextGenerator generator, ObjectMapper json, PromptBounds bounds, ChatTemplateLimits templateLimits) {
        this.server = server;
        this.generator = generator;
        this.json = json;
        this.bounds = bounds;
        // A rendered prompt longer than the model takes is refused anyway: the render stops there.
        this.templateLimits = templateLimits.withMaxOutputChars(Math.min(templateLimits.maxOutputChars(), bounds.maxBytes()));
    }

    /** A request ready to generate: its prompt rendered and tokenized, its token limit known. */
    record Prepared(ChatCompletionRequest request, List<Integer> prompt, int maxTokens) {
    }

    private record LimitedTemplate(ChatTemplate original, ChatTemplate limited) {
    }

    /**
     * Reads, checks, renders and tokenizes one request body: the work of a preparation thread, never of the
     * dispatcher. Each message's content is checked against the model's prompt bounds before the template runs, the
     * rendered prompt before it is tokenized.
     */
    Prepared prepare(String body) {
        ChatCompletionRequest request = ChatCompletionRequest.parse(json, body, bounds, generator.generationDefaults());
        CompletionRequest.checkModel(request.model(), generator.modelName());
        generator.vocabularySize().ifPresent(request.options()::checkVocabulary);
        ChatTemplate template = template();
        String rendered;
        try {
            rendered = template.render(request.messages(), true);
        } catch (ChatTemplateException e) {
            throw ApiError.invalid("messages", e.getMessage());
        }
        bounds.check(rendered, "messages", "the conversation rendered with the model's chat template");
        List<Integer> prompt = new ArrayList<>();
        for (int id : generator.tokenizer().encodeAsWritten(rendered)) {
            prompt.add(id);
        }
        if (prompt.isEmpty()) {
            throw ApiError.invalid("messages", "the chat template rendered these messages to no tokens");
        }
        int maxTokens = maxTokens(request, prompt.size());
        server.checkHeld(request.options().n(), "n", "n " + request.options().n(), "a smaller n");
        return new Prepared(request, prompt, maxTokens);
    }

    /** Starts generating a prepared request: on the dispatcher, without waiting for anything. */
    Route start(Prepared prepared) {
        String id = "chatcmpl-" + Long.toHexString(System.currentTimeMillis()) + "-" + ids.incrementAndGet();
        long created = Instant.now().getEpochSecond();
        Drain.Ticket ticket = server.admit();
        try {
            return prepared.request().stream() ? streamed(prepared.request(), prepared.prompt(), prepared.maxTokens(), id, created, ticket)
                    : whole(prepared.request(), prepared.prompt(), prepared.maxTokens(), id, created, ticket);
        } catch (RuntimeException e) {
            ticket.close();
            throw e;
        }
    }

    /** The model's chat template within this server's limits; refused when the model has none. */
    private ChatTemplate template() {
        ChatTemplate original = generator.chatTemplate().orElseThrow(() -> ApiError.invalid("messages",
                "the model '" + generator.modelName() + "' has no chat template (no chat_template in its tokenizer_config.json); "
                        + "send a prompt to /v1/completions instead"));
        LimitedTemplate current = limited.get();
        if (current == null || current.original() != original) {
            current = new LimitedTemplate(original, original.withLimits(templateLimits));
            limited.set(current);
        }
        return current.limited();
    }

    /** The requested limit, or all the context leaves; refused if the prompt and the limit do not fit (lengths in long). */
    private int maxTokens(ChatCompletionRequest request, long promptTokens) {
        long limit = generator.maxSequenceLength();
        long left = limit - promptTokens;
        if (request.maxTokens().isEmpty()) {
            if (left < 1) {
                throw ApiError.invalid("messages", "the rendered conversation is " + promptTokens
                        + " tokens, which leaves no room to generate within the model's maximum sequence length " + limit);
            }
            return (int) left;
        }
        long max = request.maxTokens().getAsInt();
        if (max > left) {
            throw ApiError.invalid("max_tokens", "the rendered conversation (" + promptTokens + " tokens) plus max_tokens (" + max
                    + ") is " + (promptTokens + max) + ", more than the model's maximum sequence length " + limit);
        }
        return (int) max;
    }

    /** The request's n choices, each decoding its tokens as content (special tokens left out). */
    private List<CompletionChoice> choices(ChatCompletionRequest request, List<Integer> prompt) {
        TokenCodec codec = generator.tokenizer();
        List<CompletionChoice> choices = new ArrayList<>();
        for (int j = 0; j < request.options().n(); j++) {
            choices.add(new CompletionChoice(codec, codec.contentStreamingDecoder(), request.options(), prompt, false));
        }
        return choices;
    }

    private Route whole(ChatCompletionRequest request, List<Integer> prompt, int maxTokens, String id, long created, Drain.Ticket ticket) {
        List<CompletionChoice> choices = choices(request, prompt);
        List<CompletableFuture<Void>> ended = new ArrayList<>();
        List<Generation> started = server.submitAll(List.of(prompt), maxTokens, request.options(), choices, index -> {
            CompletableFuture<Void> done = new CompletableFuture<>();
            ended.add(done);
            return choices.get(index).listener(done);
        }, Optional.of(server.requestTimeout()));
        // As in /v1/completions, each choice also carries the generated ids (the end-of-sequence one included).
        CompletableFuture<HttpResponse> response = server.wholeResponse(choices, ended, started, header(id, created, "chat.completion"),
                prompt.size(), (choice, content) -> choice.putObject("message").put("role", "assistant").put("content", content),
                this::putLogprobs);
        return server.answerWhole(response, () -> started.forEach(Generation::cancel), ticket);
    }

    private Route streamed(ChatCompletionRequest request, List<Integer> prompt, int maxTokens, String id, long created,
                           Drain.Ticket ticket) {
        // Per choice: the role chunk, at most one content chunk per token, the flushed rest and the final chunk.
        return server.streamChoices(List.of(prompt), maxTokens, request.options(), choices(request, prompt), maxTokens + 4L, prompt.size(),
                new OpenAiServer.StreamShape() {
                    @Override
                    public List<ObjectNode> opening(int index, CompletionChoice choice) {
                        return List.of(chunk(id, created, index, json.createObjectNode().put("role", "assistant").put("content", ""), null, null));
                    }

                    @Override
                    public List<ObjectNode> events(int index, CompletionChoice.Piece piece) {
                        // Its content (and log-probabilities) if any, then, on its last, an empty delta with the finish reason.
                        List<ObjectNode> out = new ArrayList<>(2);
                        if (!piece.text().isEmpty() || !piece.logprobs().isEmpty()) {
                            out.add(chunk(id, created, index, json.createObjectNode().put("content", piece.text()), piece.logprobs(), null));
                        }
                        if (piece.finishReason() != null) {
                            out.add(chunk(id, created, index, json.createObjectNode(), null, piece.finishReason()));
                        }
                        return out;
                    }

                    @Override
                    public ObjectNode usageHeader() {
                        return header(id, created, "chat.completion.chunk");
                    }
                }, ticket);
    }

    private void putLogprobs(ObjectNode choice, List<LogprobsBuilder.Entry> entries) {
        if (entries == null || entries.isEmpty() && choice.has("delta")) {
            choice.putNull("logprobs");
        } else {
            choice.set("logprobs", LogprobsBuilder.chatShape(json, entries));
        }
    }

    private ObjectNode header(String id, long created, String object) {
        ObjectNode out = json.createObjectNode();
        out.put("id", id);
        out.put("object", object);
        out.put("created", created);
        out.put("model", generator.modelName());
        return out;
    }

    private ObjectNode chunk(String id, long created, int index, ObjectNode delta, List<LogprobsBuilder.Entry> logprobs, String finishReason) {
        ObjectNode out = header(id, created, "chat.completion.chunk");
        ObjectNode choice = out.putArray("choices").addObject();
        choice.put("index", index);
        choice.set("delta", delta);
        putLogprobs(choice, logprobs);
        choice.set("finish_reason", finishReason == null ? NullNode.getInstance() : TextNode.valueOf(finishReason));
        return out;
    }
}
