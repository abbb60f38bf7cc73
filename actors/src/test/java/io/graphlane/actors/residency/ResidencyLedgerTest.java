package io.graphlane.actors.residency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.graphlane.actors.residency.ResidencyLedger.Admitted;
import io.graphlane.actors.residency.ResidencyLedger.DeviceState;
import io.graphlane.actors.residency.ResidencyLedger.Refused;
import io.graphlane.actors.residency.ResidencyLedger.Result;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ResidencyLedgerTest {
    private ResidencyLedger ledger;

    @BeforeEach
    void fresh() {
        ledger = new ResidencyLedger("cpu0", 100);
        ledger.register("a", 40);
        ledger.register("b", 40);
        ledger.register("c", 30);
        ledger.register("d", 20);
    }

    private void makeResident(String... names) {
        Admitted admitted = assertInstanceOf(Admitted.class, ledger.admit(List.of(names)));
        for (ResidencyLedger.Ticket t : admitted.promotions()) {
            assertEquals(Result.APPLIED, ledger.completePromotion(t.name(), t.generation(), true));
        }
    }

    @Test
    void batchIsAdmittedAllOrNothingAndARefusalNamesItsBlockers() {
        makeResident("a", "b");
        ledger.pin("a");
        ledger.lease("b");
        Refused refused = assertInstanceOf(Refused.class, ledger.admit(List.of("d", "c")));
        assertEquals(50, refused.neededBytes());
        assertEquals(20, refused.obtainableBytes());
        assertEquals(2, refused.blockers().size(), refused.blockers().toString());
        assertTrue(refused.blockers().get(0).startsWith("a (pinned"), refused.blockers().toString());
        assertTrue(refused.blockers().get(1).startsWith("b (leased"), refused.blockers().toString());
        assertTrue(refused.message().contains("needs 50 bytes"), refused.message());
        // nothing of the batch was admitted, not even d, which alone would have fit
        assertEquals(DeviceState.ABSENT, ledger.state("d"));
        assertEquals(DeviceState.ABSENT, ledger.state("c"));
        assertEquals(80, ledger.reservedBytes());
    }

    @Test
    void aBatchLargerThanTheBudgetIsRefusedAsSuch() {
        Refused refused = assertInstanceOf(Refused.class, ledger.admit(List.of("a", "b", "c")));
        assertTrue(refused.message().contains("the batch alone exceeds the budget"), refused.message());
        assertEquals(0, ledger.reservedBytes());
    }

    @Test
    void admissionEvictsTheLeastRecentlyUsedEvictableCopiesOutsideTheBatch() {
        makeResident("a", "b");
        ledger.lease("a"); // a is used after b
        ledger.unlease("a");
        Admitted admitted = assertInstanceOf(Admitted.class, ledger.admit(List.of("c")));
        assertEquals(List.of("b"), admitted.evicted());
        assertEquals(DeviceState.ABSENT, ledger.state("b"));
        assertEquals(DeviceState.RESIDENT, ledger.state("a"));
        assertEquals(70, ledger.reservedBytes());
    }

    @Test
    void unitsAlreadyResidentInABatchNeedNoNewBytes() {
        makeResident("a");
        Admitted admitted = assertInstanceOf(Admitted.class, ledger.admit(List.of("a", "b")));
        assertEquals(List.of("a"), admitted.alreadyThere());
        assertEquals(List.of("b"), admitted.promotions().stream().map(ResidencyLedger.Ticket::name).toList());
        assertEquals(80, ledger.reservedBytes());
    }

    @Test
    void generationsOnlyIncrease() {
        long last = 0;
        for (int round = 0; round < 3; round++) {
            Admitted admitted = assertInstanceOf(Admitted.class, ledger.admit(List.of("a")));
            long promoted = admitted.promotions().get(0).generation();
            assertTrue(promoted > last, "generation " + promoted + " after " + last);
            ledger.completePromotion("a", promoted, true);
            long demoted = ledger.beginDemotion("a").generation();
            assertTrue(demoted > promoted);
            ledger.completeDemotion("a", demoted, true);
            last = demoted;
            assertEquals(last, ledger.generation("a"));
        }
    }

    @Test
    void aStaleLateResultIsIgnoredAndOnlyReturnsItsOwnBytes() {
        long first = assertInstanceOf(Admitted.class, ledger.admit(List.of("a"))).promotions().get(0).generation();
        assertEquals(first, ledger.abandonPromotion("a"));
        assertEquals(DeviceState.ABSENT, ledger.state("a"));
        assertEquals(40, ledger.reservedBytes(), "an abandoned transfer keeps its bytes until it ends");
        long second = assertInstanceOf(Admitted.class, ledger.admit(List.of("a"))).promotions().get(0).generation();
        assertTrue(second > first);
        assertEquals(80, ledger.reservedBytes());

        assertEquals(Result.STALE, ledger.completePromotion("a", first, true));
        assertEquals(DeviceState.PROMOTING, ledger.state("a"), "a stale success must not publish the copy");
        assertEquals(40, ledger.reservedBytes());
        assertEquals(Result.STALE, ledger.completePromotion("a", first, true), "a duplicate late result is stale too");
        assertEquals(40, ledger.reservedBytes());

        assertEquals(Result.APPLIED, ledger.completePromotion("a", second, true));
        assertEquals(DeviceState.RESIDENT, ledger.state("a"));
    }

    @Test
    void aCopyIsPublishedOnlyAfterItsTransferSucceeded() {
        long g = assertInstanceOf(Admitted.class, ledger.admit(List.of("a"))).promotions().get(0).generation();
        assertEquals(DeviceState.PROMOTING, ledger.state("a"));
        ResidencyException early = assertThrows(ResidencyException.class, () -> ledger.lease("a"));
        assertTrue(early.getMessage().contains("expected a published copy, found PROMOTING"), early.getMessage());
        ledger.completePromotion("a", g, true);
        ledger.lease("a");
    }

    @Test
    void aFailedPromotionReturnsItsBytesAndPublishesNothing() {
        long g = assertInstanceOf(Admitted.class, ledger.admit(List.of("a"))).promotions().get(0).generation();
        assertEquals(Result.FAILED, ledger.completePromotion("a", g, false));
        assertEquals(DeviceState.ABSENT, ledger.state("a"));
        assertEquals(0, ledger.reservedBytes());
    }

    @Test
    void pinnedLeasedInFlightAndHostlessCopiesAreNeverEvicted() {
        makeResident("a", "b");
        ledger.pin("a");
        ledger.lease("b");
        assertTrue(assertThrows(ResidencyException.class, () -> ledger.evict("a")).getMessage().contains("pinned"));
        assertTrue(assertThrows(ResidencyException.class, () -> ledger.evict("b")).getMessage().contains("leased"));
        ledger.unpin("a");
        ledger.unlease("b");

        ledger.beginDemotion("a");
        assertTrue(assertThrows(ResidencyException.class, () -> ledger.evict("a")).getMessage().contains("in flight"));
        ledger.admit(List.of("d"));
        assertTrue(assertThrows(ResidencyException.class, () -> ledger.evict("d")).getMessage().contains("in flight"));

        ledger.dropHostCopy("b");
        assertTrue(assertThrows(ResidencyException.class, () -> ledger.evict("b")).getMessage().contains("no host copy"));
        Refused refused = assertInstanceOf(Refused.class, ledger.admit(List.of("c")));
        assertEquals(3, refused.blockers().size(), refused.blockers().toString());
        assertEquals(DeviceState.DEMOTING, ledger.state("a"));
        assertEquals(DeviceState.RESIDENT, ledger.state("b"));
        assertEquals(DeviceState.PROMOTING, ledger.state("d"));
    }

    @Test
    void aDemotionKeepsTheDeviceCopyUntilItCompletesAndFallsBackOnFailure() {
        makeResident("a");
        long g = ledger.beginDemotion("a").generation();
        assertEquals(DeviceState.DEMOTING, ledger.state("a"));
        assertEquals(40, ledger.reservedBytes(), "the device copy keeps its bytes while the host copy is made");
        ledger.lease("a"); // still usable
        ledger.unlease("a");
        assertEquals(Result.FAILED, ledger.completeDemotion("a", g, false));
        assertEquals(DeviceState.RESIDENT, ledger.state("a"));
        assertEquals(40, ledger.reservedBytes());

        ledger.dropHostCopy("a");
        long again = ledger.beginDemotion("a").generation();
        assertEquals(Result.APPLIED, ledger.completeDemotion("a", again, true));
        assertEquals(DeviceState.ABSENT, ledger.state("a"));
        assertTrue(ledger.hasHostCopy("a"));
        assertEquals(0, ledger.reservedBytes());
    }

    @Test
    void pinnedOrLeasedCopiesCannotBeDemoted() {
        makeResident("a");
        ledger.pin("a");
        assertTrue(assertThrows(ResidencyException.class, () -> ledger.beginDemotion("a")).getMessage().contains("pinned"));
        ledger.unpin("a");
        ledger.lease("a");
        assertTrue(assertThrows(ResidencyException.class, () -> ledger.beginDemotion("a")).getMessage().contains("leased"));
        assertThrows(ResidencyException.class, () -> ledger.admit(List.of("nope")));
    }
}
