package io.graphlane.cluster.pipeline;

import io.graphlane.core.backend.ExecutorClosedException;
import io.graphlane.core.backend.SubmissionBackend;
import io.graphlane.core.completion.Completion;
import io.graphlane.core.completion.Outcome;
import io.graphlane.core.completion.PoisonedPreconditionException;
import io.graphlane.core.completion.SettableCompletion;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorRef;

/**
 * The {@link SubmissionBackend} of the proxy lanes on the serving node: each executor is a {@link Link} to the host of
 * one stage, and a work item is sent there as one batched step by the {@link StageDirectory}, its completion completing
 * when the host answers. A link sends its work in submission order, each one only once every completion it was ordered
 * after ({@link #orderAfter}) has succeeded and the work before it was sent: the ordering is a chain of completion
 * callbacks, never a wait. A producer that failed fails the consumer with a {@link PoisonedPreconditionException}
 * naming it, and the consumer is never sent.
 */
final class StageLinks implements SubmissionBackend<StageLinks.Link, SettableCompletion, RemoteStageProgram.Work> {

    /** The link to one stage's host. Its state is guarded by the link itself. */
    static final class Link {
        private final int stage;
        private final String name;
        private List<Completion> orderAfter = new ArrayList<>(1);
        /** Completes once the last work submitted was sent (or failed before it could be). */
        private CompletableFuture<Void> tail = CompletableFuture.completedFuture(null);
        private long submitted;
        private final AtomicInteger unfinished = new AtomicInteger();
        private SettableCompletion stopped;

        Link(int stage, String name) {
            this.stage = stage;
            this.name = name;
        }

        /** The stage this link reaches. */
        int stage() {
            return stage;
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private final String device;
    private final ActorRef<StageDirectory.Command> directory;
    private final List<Link> links = new ArrayList<>();
    private boolean shutDown;

    StageLinks(String device, ActorRef<StageDirectory.Command> directory) {
        this.device = device;
        this.directory = directory;
    }

    @Override
    public String deviceName() {
        return device;
    }

    /** The root has no host of its own; forks are the links to stage 0, 1, … in order. */
    @Override
    public synchronized Link rootExecutor() {
        return new Link(-1, device);
    }

    @Override
    public synchronized List<Link> forkExecutors(Link executor, int count) {
        if (shutDown) {
            throw new ExecutorClosedException(device, "forkExecutors");
        }
        List<Link> forked = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int stage = links.size();
            Link link = new Link(stage, device + "/stage-" + stage);
            links.add(link);
            forked.add(link);
        }
        return forked;
    }

    @Override
    public SettableCompletion submit(Link link, List<? extends RemoteStageProgram.Work> work) {
        if (work.isEmpty()) {
            return SettableCompletion.succeeded(link.name + "#empty");
        }
        List<SettableCompletion> each = new ArrayList<>(work.size());
        for (RemoteStageProgram.Work w : work) {
            each.add(submitOne(link, w));
        }
        if (each.size() == 1) {
            return each.get(0);
        }
        SettableCompletion all = new SettableCompletion(each.get(each.size() - 1).label());
        whenAll(new ArrayList<>(each), failure -> {
            if (failure == null) {
                all.succeed();
            } else {
                all.fail(failure.cause());
            }
        });
        return all;
    }

    private SettableCompletion submitOne(Link link, RemoteStageProgram.Work work) {
        SettableCompletion done;
        List<Completion> producers;
        CompletableFuture<Void> previous;
        CompletableFuture<Void> sent = new CompletableFuture<>();
        synchronized (link) {
            if (link.stopped != null) {
                throw new ExecutorClosedException(link.name, "submit");
            }
            done = new SettableCompletion(link.name + "#" + (++link.submitted));
            producers = link.orderAfter;
            link.orderAfter = new ArrayList<>(1);
            previous = link.tail;
            link.tail = sent;
            link.unfinished.incrementAndGet();
        }
        done.whenDone(o -> finished(link));
        previous.whenComplete((ignored, error) -> whenAll(producers, failure -> {
            if (failure != null) {
                done.fail(PoisonedPreconditionException.of(done.label(), failure.label(), failure.cause()));
            } else {
                directory.tell(new StageDirectory.Send(work, done));
            }
            sent.complete(null);
        }));
        return done;
    }

    private void finished(Link link) {
        SettableCompletion stop;
        synchronized (link) {
            if (link.unfinished.decrementAndGet() > 0 || link.stopped == null) {
                return;
            }
            stop = link.stopped;
        }
        stop.succeed();
    }

    /** A producer's failure: its label and cause. */
    private record Failure(String label, Throwable cause) {
    }

    /** Runs {@code then} once every completion in {@code all} is done: with the first failure met, or null. */
    private static void whenAll(List<? extends Completion> all, Consumer<Failure> then) {
        if (all.isEmpty()) {
            then.accept(null);
            return;
        }
        AtomicInteger left = new AtomicInteger(all.size());
        Failure[] first = new Failure[1];
        for (Completion c : all) {
            c.whenDone(o -> {
                if (o instanceof Outcome.Failed failed) {
                    synchronized (first) {
                        if (first[0] == null) {
                            first[0] = new Failure(c.label(), failed.cause());
                        }
                    }
                }
                if (left.decrementAndGet() == 0) {
                    Failure f;
                    synchronized (first) {
                        f = first[0];
                    }
                    then.accept(f);
                }
            });
        }
    }

    @Override
    public void orderAfter(SettableCompletion producer, Link link) {
        synchronized (link) {
            if (link.stopped != null) {
                throw new ExecutorClosedException(link.name, "orderAfter");
            }
            link.orderAfter.add(producer);
        }
    }

    @Override
    public void retainUntilComplete(Link link, SettableCompletion completion, Object value) {
        completion.whenDone(o -> {
            if (value instanceof AutoCloseable closeable) {
                try {
                    closeable.close();
                } catch (Exception e) {
                    throw new IllegalStateException("releasing a value retained by " + completion.label() + " failed", e);
                }
            }
        });
    }

    @Override
    public Completion shutdownExecutor(Link link) {
        synchronized (link) {
            if (link.stopped == null) {
                link.stopped = new SettableCompletion(link.name + " stopped");
                if (link.unfinished.get() == 0) {
                    link.stopped.succeed();
                }
            }
            return link.stopped;
        }
    }

    @Override
    public Completion shutdown() {
        List<Link> all;
        synchronized (this) {
            shutDown = true;
            all = List.copyOf(links);
        }
        List<Completion> each = new ArrayList<>();
        for (Link link : all) {
            each.add(shutdownExecutor(link));
        }
        SettableCompletion stopped = new SettableCompletion(device + " stopped");
        whenAll(each, failure -> stopped.succeed());
        return stopped;
    }
}
