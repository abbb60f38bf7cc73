package io.graphlane.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The stop matcher: text ends before the first stop string, and nothing that may still become one is released. */
class StopMatcherTest {

    @Test
    void textEndsBeforeTheStopStringWithinOnePiece() {
        StopMatcher m = new StopMatcher(List.of("END"));
        assertEquals("hello ", m.offer("hello END more"));
        assertTrue(m.stopped());
        assertEquals("", m.offer("later"), "nothing after a stop");
        assertEquals("", m.flush());
    }

    @Test
    void aStopStringSplitAcrossPiecesIsHeldBackUntilItMatches() {
        StopMatcher m = new StopMatcher(List.of("\n\n"));
        assertEquals("one", m.offer("one\n"), "the newline may begin the stop string: held back");
        assertFalse(m.stopped());
        assertEquals("", m.offer("\ntwo"));
        assertTrue(m.stopped());
    }

    @Test
    void aHeldPrefixThatDoesNotMatchIsReleasedWithTheNextPiece() {
        StopMatcher m = new StopMatcher(List.of("STOP"));
        assertEquals("a", m.offer("aST"));
        assertEquals("", m.offer("O"), "STO still a prefix");
        assertEquals("STOrm", m.offer("rm"), "STOr is not: released whole");
        assertEquals("x", m.offer("xS"));
        assertEquals("S", m.flush(), "at the end the held text is released");
        assertFalse(m.stopped());
    }

    @Test
    void severalStopsHoldTheLongestSuffixThatBeginsAny() {
        StopMatcher m = new StopMatcher(List.of("xyz", "yzw"));
        assertEquals("a", m.offer("axy"), "'xy' begins 'xyz' (and 'y' begins 'yzw'): the longer is held");
        assertEquals("xyq", m.offer("q"), "neither stop can match any more");
        assertEquals("", m.offer("yz"), "'yz' begins 'yzw'");
        assertEquals("", m.offer("w"));
        assertTrue(m.stopped());
        StopMatcher n = new StopMatcher(List.of("cat", "ab"));
        assertEquals("x", n.offer("xa"));
        assertEquals("", n.offer("bc"), "'ab' matched at the held 'a'");
        assertTrue(n.stopped());
    }

    @Test
    void overlappingCandidatesMatchAtTheEarliestPosition() {
        StopMatcher m = new StopMatcher(List.of("abcd", "bc"));
        assertEquals("", m.offer("ab"));
        assertEquals("a", m.offer("c"), "'bc' completes at index 1, before 'abcd' could");
        assertTrue(m.stopped());
    }

    @Test
    void multiByteCharactersAreMatchedAndNeverSplit() {
        StopMatcher m = new StopMatcher(List.of("é!", "\uD83D\uDE00"));
        assertEquals("caf", m.offer("café"), "é may begin 'é!'");
        assertEquals("é?", m.offer("?"));
        assertEquals("x ", m.offer("x \uD83D\uDE00 y"));
        assertTrue(m.stopped());

        StopMatcher cjk = new StopMatcher(List.of("終わり"));
        StringBuilder shown = new StringBuilder();
        for (String piece : List.of("日本", "語の終", "わ", "り", "です")) {
            shown.append(cjk.offer(piece));
        }
        assertEquals("日本語の", shown.toString());
        assertTrue(cjk.stopped());
    }

    @Test
    void withoutStopStringsEverythingPassesAtOnce() {
        StopMatcher m = new StopMatcher(List.of());
        assertEquals("any text", m.offer("any text"));
        assertEquals("", m.flush());
        assertFalse(m.stopped());
    }
}
