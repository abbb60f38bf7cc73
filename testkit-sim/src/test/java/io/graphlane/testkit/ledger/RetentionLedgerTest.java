package io.graphlane.testkit.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.core.completion.SettableCompletion;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class RetentionLedgerTest {
    private final RetentionLedger ledger = new RetentionLedger();

    @Test
    void aValueReleasedOnceAfterItsCompletionIsClean() throws Exception {
        SettableCompletion work = new SettableCompletion("cpu0/lane-1#4");
        RetentionLedger.Entry value = ledger.retain("activation-4", work);
        work.succeed();
        value.close();
        ledger.assertClean();
        assertTrue(ledger.awaitSettled(Duration.ofSeconds(1)));
        List<RetentionLedger.EventKind> kinds = ledger.events().stream().map(RetentionLedger.Event::kind).toList();
        assertEquals(List.of(RetentionLedger.EventKind.ACQUIRED, RetentionLedger.EventKind.HELD_UNTIL,
                RetentionLedger.EventKind.COMPLETION_ENDED, RetentionLedger.EventKind.RELEASED), kinds);
    }

    @Test
    void aDoubleReleaseIsNamedWithBothEvents() {
        SettableCompletion work = SettableCompletion.succeeded("cpu0/lane-0#1");
        RetentionLedger.Entry value = ledger.retain("weights.layer0", work);
        value.close();
        value.close();
        AssertionError broken = assertThrows(AssertionError.class, ledger::assertReleasedExactlyOnce);
        assertTrue(broken.getMessage().contains("'weights.layer0'"), broken.getMessage());
        assertTrue(broken.getMessage().contains("cpu0/lane-0#1"), broken.getMessage());
        assertTrue(broken.getMessage().contains("released 2 times"), broken.getMessage());
    }

    @Test
    void aReleaseBeforeTheCompletionEndedIsNamed() {
        SettableCompletion work = new SettableCompletion("sim0/lane-2#9");
        RetentionLedger.Entry value = ledger.retain("kv-block-12", work);
        value.close();
        work.succeed();
        AssertionError broken = assertThrows(AssertionError.class, ledger::assertNeverReleasedBeforeCompletion);
        assertTrue(broken.getMessage().contains("'kv-block-12'"), broken.getMessage());
        assertTrue(broken.getMessage().contains("before [sim0/lane-2#9] recorded an outcome"), broken.getMessage());
        ledger.assertReleasedExactlyOnce();
    }

    @Test
    void aValueHeldUntilSeveralCompletionsWaitsForAll() {
        SettableCompletion first = new SettableCompletion("a#0");
        SettableCompletion second = new SettableCompletion("b#0");
        RetentionLedger.Entry lease = ledger.acquire("lease shard-2").heldUntil(first).heldUntil(second);
        first.succeed();
        lease.close();
        second.succeed();
        assertEquals(1, ledger.violations().size());
        assertTrue(ledger.violations().get(0).contains("before [b#0]"), ledger.violations().get(0));
    }

    @Test
    void aValueNeverReleasedIsNamedWithItsCompletionsOutcome() throws Exception {
        SettableCompletion work = SettableCompletion.failed("cpu1/lane-3#0", new IllegalStateException("boom"));
        ledger.retain("staging-buffer", work);
        assertFalse(ledger.awaitSettled(Duration.ofMillis(20)));
        AssertionError broken = assertThrows(AssertionError.class, ledger::assertClean);
        assertTrue(broken.getMessage().contains("'staging-buffer' (held until cpu1/lane-3#0) was never released"), broken.getMessage());
        assertTrue(broken.getMessage().contains("failed: boom"), broken.getMessage());
    }

    @Test
    void aLeakIsOnPurposeOnlyForAnUnprovenCompletion() {
        SettableCompletion lost = new SettableCompletion("gpu0/stream-1#7");
        RetentionLedger.Entry buffer = ledger.retain("device-buffer", lost);
        ledger.markUnproven(lost, "device lost");
        buffer.reportLeak("device lost");
        ledger.assertClean();

        SettableCompletion proven = SettableCompletion.succeeded("gpu0/stream-1#8");
        ledger.retain("other-buffer", proven).reportLeak("no reason");
        AssertionError broken = assertThrows(AssertionError.class, ledger::assertLeaksOnlyForUnprovenCompletions);
        assertTrue(broken.getMessage().contains("'other-buffer'"), broken.getMessage());
        assertTrue(broken.getMessage().contains("none of its completions is unproven"), broken.getMessage());
    }

    @Test
    void freeingAValueOfAnUnprovenCompletionIsAViolation() {
        SettableCompletion lost = new SettableCompletion("gpu0/stream-0#2");
        RetentionLedger.Entry buffer = ledger.retain("weights", lost);
        ledger.markUnproven(lost, "device lost");
        buffer.close();
        AssertionError broken = assertThrows(AssertionError.class, ledger::assertLeaksOnlyForUnprovenCompletions);
        assertTrue(broken.getMessage().contains("can never be proven; it must be leaked, not freed"), broken.getMessage());
    }

    @Test
    void anUnprovenValueWhoseLeakWasNeverReportedIsAViolation() {
        SettableCompletion lost = new SettableCompletion("gpu0/stream-0#3");
        ledger.retain("silently-kept", lost);
        ledger.markUnproven(lost, "device lost");
        AssertionError broken = assertThrows(AssertionError.class, ledger::assertLeaksOnlyForUnprovenCompletions);
        assertTrue(broken.getMessage().contains("its leak was never reported"), broken.getMessage());
    }

    @Test
    void theFirstReleaseClosesTheResourceOnce() {
        AtomicInteger closed = new AtomicInteger();
        RetentionLedger.Entry value = ledger.retain("buffer", SettableCompletion.succeeded("x#0"), closed::incrementAndGet);
        value.close();
        value.close();
        assertEquals(1, closed.get());
    }

    @Test
    void aResourceThatFailsToCloseIsNamedAndTheReleaseRecorded() {
        RetentionLedger.Entry value = ledger.retain("mapped-file", SettableCompletion.succeeded("x#1"), () -> {
            throw new IOException("munmap failed");
        });
        ReleaseFailedException failed = assertThrows(ReleaseFailedException.class, value::close);
        assertTrue(failed.getMessage().contains("'mapped-file'") && failed.getMessage().contains("munmap failed"), failed.getMessage());
        assertEquals(1, value.releaseCount());
    }

    @Test
    void aLeaseAcquiredWithoutWorkMayBeReleasedAtOnce() {
        ledger.acquire("lease of a refused unit").close();
        ledger.assertClean();
    }
}
