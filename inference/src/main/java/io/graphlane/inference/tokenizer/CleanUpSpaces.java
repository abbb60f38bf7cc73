package io.graphlane.inference.tokenizer;

/**
 * Hugging Face's {@code clean_up_tokenization}, which a tokenizer applies to decoded text when its
 * {@code tokenizer_config.json} sets {@code clean_up_tokenization_spaces}: the space before {@code .}, {@code ?},
 * {@code !}, {@code ,}, {@code n't}, {@code 'm}, {@code 's}, {@code 've}, {@code 're} is dropped, and {@code " ' "}
 * becomes {@code "'"}, replaced in that order over the whole text.
 *
 * <p>{@link Stream} applies it to text that arrives in pieces: every pattern starts with a space and is at most four
 * characters long, so text followed by three characters without a space cleans the same whatever comes after; a
 * stream emits text up to such a point and holds back the rest.
 */
public final class CleanUpSpaces {
    private static final String[][] REPLACEMENTS = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
    };
    /** The longest pattern's length less one: the characters after a cut that a pattern through it could need. */
    private static final int REACH = 3;

    private CleanUpSpaces() {
    }

    /** {@code text} cleaned up as Hugging Face's {@code clean_up_tokenization} does. */
    public static String clean(String text) {
        if (text.indexOf(' ') < 0) {
            return text;
        }
        String out = text;
        for (String[] r : REPLACEMENTS) {
            out = out.replace(r[0], r[1]);
        }
        return out;
    }

    /** Cleans text that arrives in pieces; the pieces it returns, and then {@link #flush()}, add up to {@link #clean} of all. */
    public static final class Stream {
        private final StringBuilder pending = new StringBuilder();

        /** Takes {@code piece}; returns the cleaned text that no later piece can change, possibly empty. */
        public String next(String piece) {
            pending.append(piece);
            int cut = cutPoint();
            if (cut <= 0) {
                return "";
            }
            String ready = pending.substring(0, cut);
            pending.delete(0, cut);
            return clean(ready);
        }

        /** The cleaned text still held back; the stream is empty afterwards. */
        public String flush() {
            String rest = clean(pending.toString());
            pending.setLength(0);
            return rest;
        }

        /**
         * The largest index that leaves at least {@value #REACH} characters pending (a pattern may start within them)
         * and has no space in the {@value #REACH} characters before it (so no pattern runs through it), or 0.
         */
        private int cutPoint() {
            for (int cut = pending.length() - REACH; cut >= REACH; cut--) {
                boolean clear = true;
                for (int i = cut - REACH; i < cut; i++) {
                    if (pending.charAt(i) == ' ') {
                        clear = false;
                        break;
                    }
                }
                if (clear) {
                    return cut;
                }
            }
            return 0;
        }
    }
}
