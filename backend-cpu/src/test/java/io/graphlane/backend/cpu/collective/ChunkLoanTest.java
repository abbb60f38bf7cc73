package io.graphlane.backend.cpu.collective;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/** A lent chunk is never read after its sender withdrew it, and a withdrawal waits out a read under way. */
class ChunkLoanTest {

    @Test
    void aWithdrawnLoanCannotBeRead() {
        ChunkLoan loan = new ChunkLoan();
        loan.withdraw();
        assertFalse(loan.beginRead(), "a receiver began reading storage its sender had withdrawn");
    }

    @Test
    void aReturnedLoanWithdrawsAtOnceAndCannotBeReadAgain() {
        ChunkLoan loan = new ChunkLoan();
        assertTrue(loan.beginRead());
        loan.endRead();
        loan.withdraw();
        assertFalse(loan.beginRead(), "a loan was read twice");
    }

    @Test
    void withdrawingWaitsForTheReadUnderWay() throws Exception {
        ChunkLoan loan = new ChunkLoan();
        assertTrue(loan.beginRead());
        AtomicBoolean readEnded = new AtomicBoolean();
        CountDownLatch withdrawing = new CountDownLatch(1);
        CompletableFuture<Boolean> withdrawn = CompletableFuture.supplyAsync(() -> {
            withdrawing.countDown();
            loan.withdraw();
            return readEnded.get();
        });
        assertTrue(withdrawing.await(10, TimeUnit.SECONDS));
        assertFalse(withdrawn.isDone() && !readEnded.get(), "the withdrawal returned while the receiver was still reading");
        readEnded.set(true);
        loan.endRead();
        assertTrue(withdrawn.get(10, TimeUnit.SECONDS), "the withdrawal returned before the read ended");
    }
}
