package io.graphlane.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** What the CPU backend promises beyond the shared submission laws: named worker threads and clear refusals. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class CpuBackendTest {

    @Test
    void eachLaneRunsItsWorkOnItsOwnNamedWorkerThread() throws Exception {
        try (CpuBackend cpu = new CpuBackend("cpu-named")) {
            List<CpuExecutor> lanes = cpu.forkExecutors(cpu.rootExecutor(), 2);
            List<String> threads = new CopyOnWriteArrayList<>();
            for (CpuExecutor lane : lanes) {
                cpu.submit(lane, () -> threads.add(Thread.currentThread().getName())).awaitSuccess();
            }
            assertEquals(List.of("graphlane-cpu-named/lane-0", "graphlane-cpu-named/lane-1"), threads);
            assertEquals("cpu-named/lane-1", lanes.get(1).name());
        }
    }

    @Test
    void anExecutorOfAnotherDeviceIsRefusedNamingBothDevices() {
        try (CpuBackend a = new CpuBackend("cpu-a"); CpuBackend b = new CpuBackend("cpu-b")) {
            CpuExecutor foreign = b.forkExecutors(b.rootExecutor(), 1).get(0);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.submit(foreign, CpuWork.NOOP));
            assertTrue(e.getMessage().contains("cpu-b/lane-0") && e.getMessage().contains("not to cpu-a"), e.getMessage());
        }
    }

    @Test
    void aNegativeForkCountIsRefusedWithTheValue() {
        try (CpuBackend cpu = new CpuBackend()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> cpu.forkExecutors(cpu.rootExecutor(), -2));
            assertTrue(e.getMessage().contains("got -2"), e.getMessage());
        }
    }

    @Test
    void aCheckedExceptionFromWorkIsTheRecordedCause() throws Exception {
        try (CpuBackend cpu = new CpuBackend()) {
            Exception cause = new java.io.IOException("read of shard 3 failed");
            CpuCompletion c = cpu.submit(cpu.rootExecutor(), () -> {
                throw cause;
            });
            assertEquals(cause, c.await() instanceof io.graphlane.core.completion.Outcome.Failed f ? f.cause() : null);
        }
    }

    @Test
    void anInterruptedWorkerClosesItsLaneInsteadOfAcceptingWorkThatNeverRuns() throws Exception {
        try (CpuBackend cpu = new CpuBackend("cpu-int")) {
            CpuExecutor lane = cpu.forkExecutors(cpu.rootExecutor(), 1).get(0);
            cpu.submit(lane, CpuWork.NOOP).awaitSuccess();
            Thread worker = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().equals("graphlane-cpu-int/lane-0")).findFirst().orElseThrow();
            worker.interrupt();
            cpu.shutdownExecutor(lane).await();
            io.graphlane.core.backend.ExecutorClosedException e = assertThrows(io.graphlane.core.backend.ExecutorClosedException.class,
                    () -> cpu.submit(lane, CpuWork.NOOP));
            assertTrue(e.getMessage().contains("cpu-int/lane-0"), e.getMessage());
        }
    }
}
