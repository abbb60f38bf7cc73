package io.graphlane.inference.chat;

import java.util.Objects;

/** One message of a conversation, as a chat template sees it: {@code message['role']} and {@code message['content']}. */
public record ChatMessage(String role, String content) {
    public ChatMessage {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(content, "content");
    }
}
