package io.graphlane.backend.cpu;

import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.completion.SettableCompletion;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * One CPU lane: a dedicated, named worker thread that runs its queue in FIFO order.
 * Waits for producers on other lanes happen on this worker (the "device side"), never on
 * the thread that submits.
 */
public final class CpuExecutor {
    private static final System.Logger LOG = System.getLogger(CpuExecutor.class.getName());

    /** A queued submission: its work, its exact completion, and the producers it must follow. */
    private record Task(List<? extends CpuWork> work, CpuCompletion completion, List<CpuCompletion> preconditions) { }

    private static final Task STOP = new Task(List.of(), null, List.of());

    private final CpuBackend device;
    private final String name;
    private final LinkedBlockingQueue<Task> queue = new LinkedBlockingQueue<>();
    private final SettableCompletion stopped;
    private final Thread worker;
    private final Object submitLock = new Object();
    private List<CpuCompletion> pendingPreconditions = new ArrayList<>(2);
    private long sequence;
    private boolean closed;

    CpuExecutor(CpuBackend device, String name) {
        this.device = device;
        this.name = name;
        this.stopped = new SettableCompletion(name + " (stopped)");
        this.worker = new Thread(this::runLoop, "graphlane-" + name);
        this.worker.setDaemon(true);
        this.worker.start();
    }

    /** The lane's name, {@code <device>/<lane>}. */
    public String name() {
        return name;
    }

    CpuBackend device() {
        return device;
    }

    CpuCompletion submit(List<? extends CpuWork> work) {
        synchronized (submitLock) {
            if (closed) {
                throw new ExecutorClosedException(name, "submit");
            }
            CpuCompletion completion = new CpuCompletion(device, name + "#" + sequence++);
            List<CpuCompletion> preconditions = pendingPreconditions;
            if (work.isEmpty() && preconditions.isEmpty()) {
                completion.succeed();
                return completion;
            }
            pendingPreconditions = new ArrayList<>(2);
            queue.add(new Task(List.copyOf(work), completion, preconditions));
            return completion;
        }
    }

    void orderAfter(CpuCompletion producer) {
        synchronized (submitLock) {
            if (closed) {
                throw new ExecutorClosedException(name, "orderAfter");
            }
            if (producer.outcome().map(Outcome::isSuccess).orElse(false)) {
                return; // already proven: the order holds without queuing a wait
            }
            pendingPreconditions.add(producer);
        }
    }

    SettableCompletion shutdown() {
        synchronized (submitLock) {
            if (!closed) {
                closed = true;
                queue.add(STOP);
            }
        }
        return stopped;
    }

    private void runLoop() {
        try {
            while (true) {
                Task task = queue.take();
                if (task == STOP) {
                    return;
                }
                run(task);
            }
        } catch (InterruptedException e) {
            LOG.log(System.Logger.Level.WARNING, "worker of lane " + name + " was interrupted; the lane is closed and its queued work fails");
            failQueuedAfterInterrupt();
            Thread.currentThread().interrupt();
        } finally {
            stopped.succeed();
        }
    }

    /**
     * The worker is gone, so nothing queued can ever run: close the lane (later calls are refused) and fail
     * what is queued. None of it started, so failing it (and releasing what it retained) frees nothing in use.
     */
    private void failQueuedAfterInterrupt() {
        List<Task> abandoned = new ArrayList<>();
        synchronized (submitLock) {
            closed = true;
            queue.drainTo(abandoned);
        }
        for (Task task : abandoned) {
            if (task != STOP) {
                task.completion().fail(new ExecutorClosedException(name, "running " + task.completion().label()));
            }
        }
    }

    private void run(Task task) {
        for (CpuCompletion producer : task.preconditions()) {
            Outcome outcome = producer.awaitUninterruptibly();
            if (outcome instanceof Outcome.Failed failed) {
                task.completion().fail(PoisonedPreconditionException.of(task.completion().label(), producer.label(), failed.cause()));
                return;
            }
        }
        try {
            for (CpuWork item : task.work()) {
                item.run();
            }
        } catch (Exception | Error e) {
            if (e instanceof VirtualMachineError vme && !(e instanceof OutOfMemoryError)) {
                task.completion().fail(e);
                throw vme;
            }
            task.completion().fail(e);
            return;
        }
        task.completion().succeed();
    }

    @Override
    public String toString() {
        return name;
    }
}
