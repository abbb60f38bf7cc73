package io.graphlane.inference.tokenizer;

import java.nio.file.Path;

/**
 * Encodes a text of the given size with a tokenizer.json and prints {@code ids N}: run in a JVM of its own by
 * {@link TextTokenizerTest}, since a failure inside the native tokenizer aborts the whole JVM.
 */
public final class LargeTextEncoding {
    private LargeTextEncoding() {
    }

    public static void main(String[] args) {
        Path file = Path.of(args[0]);
        int bytes = Integer.parseInt(args[1]);
        StringBuilder text = new StringBuilder(bytes);
        for (int i = 0; i < bytes; i++) {
            text.append(i % 8 == 7 ? ' ' : (char) ('a' + i % 26));
        }
        try (TextTokenizer tokenizer = TextTokenizer.load(file, false)) {
            System.out.println("ids " + tokenizer.encode(text.toString()).length);
        }
    }
}
