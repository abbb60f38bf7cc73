package io.graphlane.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.graphlane.inference.api.FinishReason;
import io.graphlane.inference.api.Generation;
import io.graphlane.inference.api.GenerationListener;
import io.graphlane.inference.api.GenerationRequest;
import io.graphlane.inference.api.TextGenerator;
import io.graphlane.inference.chat.ChatTemplate;
import io.graphlane.inference.chat.ChatTemplateException;
import io.graphlane.inference.tokenizer.StreamingDecoder;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.AllDirectives;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * {@code POST /v1/chat/completions}: the messages are rendered with the model's chat template, the rendered prompt
 * is tokenized as written (special-token text becomes its token, nothing is prepended), and the assistant's reply is
 * generated until an end-of-sequence id or the token limit. The reply's content leaves special tokens out; its
 * usage counts every generated id, the end-of-sequence one included, as {@code /v1/completions} does.
 */
final class ChatCompletions extends AllDirectives {
    private final OpenAiServer server;
    private final ActorSystem<?> system;
    private final TextGenerator generator;
    private final ObjectMapper json;
    private final AtomicLong ids = new AtomicLong();

    ChatCompletions(OpenAiServer server, ActorSystem<?> system, TextGenerator generator, ObjectMapper json) {
        this.server = server;
        this.system = system;
        this.generator = generator;
        this.json = json;
    }

    /** Answers one request body. */
    Route answer(String body) {
        ChatCompletionRequest request = ChatCompletionRequest.parse(json, body);
        CompletionRequest.checkModel(request.model(), generator.modelName());
        generator.vocabularySize().ifPresent(size -> GenerationOptions.checkLogitBias(request.sampling(), size));
        ChatTemplate template = generator.chatTemplate().orElseThrow(() -> ApiError.invalid("messages",
                "the model '" + generator.modelName() + "' has no chat template (no chat_template in its tokenizer_config.json); "
                        + "send a prompt to /v1/completions instead"));
        String rendered;
        try {
            rendered = template.render(request.messages(), true);
        } catch (ChatTemplateException e) {
            throw ApiError.invalid("messages", e.getMessage());
        }
        List<Integer> prompt = new ArrayList<>();
        for (int id : generator.tokenizer().encodeAsWritten(rendered)) {
            prompt.add(id);
        }
        if (prompt.isEmpty()) {
            throw ApiError.invalid("messages", "the chat template rendered these messages to no tokens");
        }
        int maxTokens = maxTokens(request, prompt.size());
        String id = "chatcmpl-" + Long.toHexString(System.currentTimeMillis()) + "-" + ids.incrementAndGet();
        long created = Instant.now().getEpochSecond();
        Drain.Ticket ticket = server.admit();
        try {
            if (request.stream()) {
                return streamed(request, new GenerationRequest(prompt, maxTokens, request.sampling(), Optional.empty()), id, created, ticket);
            }
            return whole(new GenerationRequest(prompt, maxTokens, request.sampling(), Optional.of(server.requestTimeout())),
                    id, created, ticket);
        } catch (RuntimeException e) {
            ticket.close();
            throw e;
        }
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

    private Route whole(GenerationRequest request, String id, long created, Drain.Ticket ticket) {
        Generation generation = server.submit(request, new GenerationListener() { });
        CompletableFuture<HttpResponse> response = generation.result().toCompletableFuture().handle((result, failure) -> {
            if (failure != null) {
                return server.errorResponse(OpenAiServer.generationError(OpenAiServer.unwrap(failure)));
            }
            ObjectNode out = header(id, created, "chat.completion");
            ObjectNode choice = out.putArray("choices").addObject();
            choice.put("index", 0);
            choice.putObject("message")
                    .put("role", "assistant")
                    .put("content", generator.tokenizer().decodeContent(result.generatedIds()));
            // As in /v1/completions, the choice also carries the generated ids (the end-of-sequence one included).
            result.generatedIds().forEach(choice.putArray("token_ids")::add);
            choice.putNull("logprobs");
            choice.put("finish_reason", result.finishReason().openAiName());
            OpenAiServer.putUsage(out, result.promptIds().size(), result.generatedIds().size());
            return server.jsonResponse(StatusCodes.OK, out);
        });
        return server.answerWhole(response, generation::cancel, ticket);
    }

    private Route streamed(ChatCompletionRequest chat, GenerationRequest request, String id, long created, Drain.Ticket ticket) {
        // The role chunk, at most one content chunk per token, the flushed rest, the final chunk, usage, [DONE].
        EventStream events = new EventStream(system, 1, request.maxNewTokens() + 4L);
        ObjectNode role = json.createObjectNode().put("role", "assistant").put("content", "");
        events.send(chunk(id, created, role, null));
        int promptTokens = request.promptIds().size();
        Generation generation = server.submit(request, new GenerationListener() {
            private final StreamingDecoder decoder = generator.tokenizer().contentStreamingDecoder();
            private final AtomicInteger generated = new AtomicInteger();

            @Override
            public void onToken(int tokenId) {
                generated.incrementAndGet();
                sendContent(decoder.next(tokenId));
            }

            @Override
            public void onFinished(FinishReason reason) {
                sendContent(decoder.flush());
                events.send(chunk(id, created, json.createObjectNode(), reason.openAiName()));
                if (chat.includeUsage()) {
                    ObjectNode usage = header(id, created, "chat.completion.chunk");
                    usage.putArray("choices");
                    OpenAiServer.putUsage(usage, promptTokens, generated.get());
                    events.send(usage);
                }
                events.choiceEnded();
            }

            @Override
            public void onFailed(Throwable cause) {
                events.send(server.errorBody(OpenAiServer.generationError(cause)));
                events.choiceEnded();
            }

            private void sendContent(String text) {
                if (!text.isEmpty()) {
                    events.send(chunk(id, created, json.createObjectNode().put("content", text), null));
                }
            }
        });
        // A client that goes away cancels the generation; a finished one ignores it. The stream's end closes the ticket.
        return complete(events.response(() -> {
            generation.cancel();
            ticket.close();
        }));
    }

    private ObjectNode header(String id, long created, String object) {
        ObjectNode out = json.createObjectNode();
        out.put("id", id);
        out.put("object", object);
        out.put("created", created);
        out.put("model", generator.modelName());
        return out;
    }

    private ObjectNode chunk(String id, long created, ObjectNode delta, String finishReason) {
        ObjectNode out = header(id, created, "chat.completion.chunk");
        ObjectNode choice = out.putArray("choices").addObject();
        choice.put("index", 0);
        choice.set("delta", delta);
        choice.putNull("logprobs");
        choice.set("finish_reason", finishReason == null ? NullNode.getInstance() : TextNode.valueOf(finishReason));
        return out;
    }
}
