package io.graphlane.testkit.ledger;

import io.graphlane.core.completion.Completion;
import java.time.Duration;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * A record of every resource held against completions (retained values, encoded leases,
 * staging buffers) and of every release, with the laws a test asserts on it: each resource
 * is released exactly once, never before every completion it is held until has recorded
 * an outcome, and leaked only when one of those completions can never be proven.
 *
 * <p>A resource enters as an {@link Entry} ({@link #acquire} or {@link #retain}); the entry
 * is an {@link AutoCloseable}, so it can be handed to any backend's
 * {@code retainUntilComplete} in place of the real value: the backend's close is the
 * release the ledger records. Every event carries a global order number, so the order of a
 * completion's end and a release can be read back. Thread-safe.
 */
public final class RetentionLedger {

    /** What happened to a resource or a completion. */
    public enum EventKind { ACQUIRED, HELD_UNTIL, COMPLETION_ENDED, RELEASED, LEAKED, MARKED_UNPROVEN }

    /**
     * One recorded event, in the ledger's total order.
     *
     * @param order the event's position in this ledger (strictly increasing)
     * @param nanoTime {@link System#nanoTime()} when it was recorded
     * @param resource the resource's name, or empty for completion events
     * @param completion the completion's label, or empty
     * @param detail the outcome, the leak reason, or the completions still running at a release
     */
    public record Event(long order, long nanoTime, EventKind kind, String resource, String completion, String detail) {
        @Override
        public String toString() {
            return "#" + order + " " + kind + (resource.isEmpty() ? "" : " " + resource)
                    + (completion.isEmpty() ? "" : " [" + completion + "]") + (detail.isEmpty() ? "" : " " + detail);
        }
    }

    private final Object lock = new Object();
    private final List<Entry> entries = new ArrayList<>();
    private final List<Event> events = new ArrayList<>();
    private final Map<Completion, String> unproven = new IdentityHashMap<>();
    private final Map<Completion, Boolean> watched = new IdentityHashMap<>();
    private long order;

    /** Records a resource acquired now and not yet held against any completion; close the entry to release it. */
    public Entry acquire(String name) {
        return acquire(name, null);
    }

    /** Like {@link #acquire(String)}; the first release also closes {@code resource}. */
    public Entry acquire(String name, AutoCloseable resource) {
        Objects.requireNonNull(name, "name");
        Entry entry = new Entry(name, resource);
        synchronized (lock) {
            entries.add(entry);
            record(EventKind.ACQUIRED, name, "", "");
        }
        return entry;
    }

    /** Records {@code name} as held until {@code completion} ends; the returned entry is the value to retain. */
    public Entry retain(String name, Completion completion) {
        return acquire(name).heldUntil(completion);
    }

    /** Like {@link #retain(String, Completion)}; the first release also closes {@code resource}. */
    public Entry retain(String name, Completion completion, AutoCloseable resource) {
        return acquire(name, resource).heldUntil(completion);
    }

    /**
     * Declares that {@code completion} can never be proven (its device was lost): resources held
     * until it must be leaked on purpose and never released.
     */
    public void markUnproven(Completion completion, String reason) {
        Objects.requireNonNull(completion, "completion");
        synchronized (lock) {
            if (unproven.putIfAbsent(completion, reason) == null) {
                record(EventKind.MARKED_UNPROVEN, "", completion.label(), reason);
                lock.notifyAll();
            }
        }
    }

    /** True once {@link #markUnproven} was called for {@code completion}. */
    public boolean isUnproven(Completion completion) {
        synchronized (lock) {
            return unproven.containsKey(completion);
        }
    }

    /** A snapshot of every entry, in acquisition order. */
    public List<Entry> entries() {
        synchronized (lock) {
            return List.copyOf(entries);
        }
    }

    /** A snapshot of every event, in order. */
    public List<Event> events() {
        synchronized (lock) {
            return List.copyOf(events);
        }
    }

    /**
     * Waits until every entry has been released or reported leaked, or is held until a completion
     * marked unproven. Returns false if {@code timeout} passed first.
     */
    public boolean awaitSettled(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (lock) {
            while (!allSettled()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                lock.wait(Math.max(1, left / 1_000_000), 0);
            }
            return true;
        }
    }

    /** Every law violated so far, one message each, naming the resource and its completions. */
    public List<String> violations() {
        List<String> all = new ArrayList<>();
        synchronized (lock) {
            for (Entry e : entries) {
                e.exactlyOnceViolation().ifPresent(all::add);
                all.addAll(e.earlyReleaseViolations());
                e.leakViolation().ifPresent(all::add);
            }
        }
        return all;
    }

    /** Asserts that every entry not reported leaked was released exactly once. */
    public void assertReleasedExactlyOnce() {
        check("released exactly once", e -> e.exactlyOnceViolation().map(List::of).orElse(List.of()));
    }

    /** Asserts that no release happened while a completion its entry is held until was still running. */
    public void assertNeverReleasedBeforeCompletion() {
        check("never released before its completion", Entry::earlyReleaseViolations);
    }

    /**
     * Asserts that leaks are on purpose only: a leaked entry is held until an unproven completion,
     * and an entry held until an unproven completion is leaked (reported), never released.
     */
    public void assertLeaksOnlyForUnprovenCompletions() {
        check("leaked only for unproven completions", e -> e.leakViolation().map(List::of).orElse(List.of()));
    }

    /** Asserts all three laws at once. */
    public void assertClean() {
        List<String> all = violations();
        if (!all.isEmpty()) {
            throw new AssertionError("retention ledger is not clean (" + all.size() + " problems):\n  "
                    + String.join("\n  ", all));
        }
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "RetentionLedger(" + entries.size() + " entries, " + events.size() + " events)";
        }
    }

    private void check(String law, Function<Entry, List<String>> rule) {
        List<String> found = new ArrayList<>();
        synchronized (lock) {
            for (Entry e : entries) {
                found.addAll(rule.apply(e));
            }
        }
        if (!found.isEmpty()) {
            throw new AssertionError("law '" + law + "' broken (" + found.size() + " problems):\n  " + String.join("\n  ", found));
        }
    }

    private boolean allSettled() {
        for (Entry e : entries) {
            if (e.releases.isEmpty() && e.leakReason == null && !e.heldUntilUnproven()) {
                return false;
            }
        }
        return true;
    }

    private long record(EventKind kind, String resource, String completion, String detail) {
        long n = ++order;
        events.add(new Event(n, System.nanoTime(), kind, resource, completion, detail));
        return n;
    }

    private void watch(Completion completion) {
        if (watched.put(completion, Boolean.TRUE) == null) {
            completion.whenDone(outcome -> {
                synchronized (lock) {
                    record(EventKind.COMPLETION_ENDED, "", completion.label(), outcome.toString());
                }
            });
        }
    }

    /** One release: its order and the labels of the held-until completions still running at that moment. */
    private record Release(long order, List<String> stillRunning) { }

    /** One resource in the ledger; closing it is its release. */
    public final class Entry implements AutoCloseable {
        private final String name;
        private final AutoCloseable resource;
        private final List<Completion> heldUntil = new ArrayList<>(1);
        private final List<Release> releases = new ArrayList<>(1);
        private String leakReason;

        private Entry(String name, AutoCloseable resource) {
            this.name = name;
            this.resource = resource;
        }

        /** The resource's name, as given at acquisition. */
        public String name() {
            return name;
        }

        /** The ledger that records this entry. */
        public RetentionLedger ledger() {
            return RetentionLedger.this;
        }

        /** Records that this resource must stay held until {@code completion} has ended; returns this entry. */
        public Entry heldUntil(Completion completion) {
            Objects.requireNonNull(completion, "completion");
            synchronized (lock) {
                heldUntil.add(completion);
                record(EventKind.HELD_UNTIL, name, completion.label(), "");
                watch(completion);
            }
            return this;
        }

        /** The completions this resource is held until. */
        public List<Completion> completions() {
            synchronized (lock) {
                return List.copyOf(heldUntil);
            }
        }

        /**
         * Records a release; the first one also closes the underlying resource. Later ones are recorded as violations.
         *
         * @throws ReleaseFailedException if closing the underlying resource failed (the release is still recorded)
         */
        @Override
        public void close() {
            boolean first;
            synchronized (lock) {
                List<String> running = heldUntil.stream().filter(c -> !c.isDone()).map(Completion::label).toList();
                long n = record(EventKind.RELEASED, name, labels(), running.isEmpty() ? "" : "still running: " + running);
                releases.add(new Release(n, running));
                first = releases.size() == 1;
                lock.notifyAll();
            }
            if (first && resource != null) {
                try {
                    resource.close();
                } catch (Exception e) {
                    throw new ReleaseFailedException(name, labels(), e);
                }
            }
        }

        /** Records that this resource is leaked on purpose (its completion can never be proven); it is not closed. */
        public void reportLeak(String reason) {
            synchronized (lock) {
                if (leakReason == null) {
                    leakReason = Objects.requireNonNull(reason, "reason");
                    record(EventKind.LEAKED, name, labels(), reason);
                    lock.notifyAll();
                }
            }
        }

        /** How many times this resource was released. */
        public int releaseCount() {
            synchronized (lock) {
                return releases.size();
            }
        }

        /** True if this resource was reported leaked. */
        public boolean isLeaked() {
            synchronized (lock) {
                return leakReason != null;
            }
        }

        @Override
        public String toString() {
            return name;
        }

        private String labels() {
            return heldUntil.stream().map(Completion::label).collect(Collectors.joining(", "));
        }

        private String describe() {
            return "resource '" + name + "'" + (heldUntil.isEmpty() ? "" : " (held until " + labels() + ")");
        }

        private boolean heldUntilUnproven() {
            return heldUntil.stream().anyMatch(unproven::containsKey);
        }

        private Optional<String> exactlyOnceViolation() {
            if (leakReason != null) {
                return Optional.empty();
            }
            if (releases.isEmpty()) {
                String ends = heldUntil.stream().map(c -> c.label() + " " + c.outcome().map(Object::toString).orElse("still running"))
                        .collect(Collectors.joining(", "));
                return Optional.of(describe() + " was never released" + (ends.isEmpty() ? "" : "; completions: " + ends));
            }
            if (releases.size() > 1) {
                return Optional.of(describe() + " was released " + releases.size() + " times, at events "
                        + releases.stream().map(r -> "#" + r.order()).collect(Collectors.joining(", ")));
            }
            return Optional.empty();
        }

        private List<String> earlyReleaseViolations() {
            List<String> early = new ArrayList<>();
            for (Release r : releases) {
                if (!r.stillRunning().isEmpty()) {
                    early.add(describe() + " was released at event #" + r.order() + " before " + r.stillRunning()
                            + " recorded an outcome");
                }
            }
            return early;
        }

        private Optional<String> leakViolation() {
            List<String> unprovenLabels = heldUntil.stream().filter(unproven::containsKey).map(Completion::label).toList();
            if (leakReason != null && unprovenLabels.isEmpty()) {
                return Optional.of(describe() + " was leaked (" + leakReason + ") but none of its completions is unproven: "
                        + heldUntil.stream().map(c -> c.label() + " " + c.outcome().map(Object::toString).orElse("still running"))
                        .collect(Collectors.joining(", ")));
            }
            if (!unprovenLabels.isEmpty() && !releases.isEmpty()) {
                return Optional.of(describe() + " was released at event #" + releases.get(0).order()
                        + " although " + unprovenLabels + " can never be proven; it must be leaked, not freed");
            }
            if (!unprovenLabels.isEmpty() && leakReason == null) {
                return Optional.of(describe() + " is held until unproven " + unprovenLabels + " but its leak was never reported");
            }
            return Optional.empty();
        }
    }
}
