package io.graphlane.core.completion;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class CompletionsTest {

    @Test
    void whenAllDoneRunsOnceAfterTheLastEndsWhateverTheOutcomes() {
        SettableCompletion a = new SettableCompletion("a");
        SettableCompletion b = new SettableCompletion("b");
        AtomicInteger runs = new AtomicInteger();
        Completions.whenAllDone(List.of(a, b), runs::incrementAndGet);
        a.fail(new IllegalStateException("a failed"));
        assertEquals(0, runs.get(), "not before every completion ended");
        b.succeed();
        assertEquals(1, runs.get());
        b.succeed();
        assertEquals(1, runs.get(), "exactly once");
    }

    @Test
    void whenAllDoneOnNothingRunsAtOnce() {
        AtomicInteger runs = new AtomicInteger();
        Completions.whenAllDone(List.of(), runs::incrementAndGet);
        assertEquals(1, runs.get());
    }
}
