package io.graphlane.scheduler.pipeline;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.LongFunction;
import org.apache.pekko.actor.typed.javadsl.TimerScheduler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The generation requests one engine actor holds, from admission to their single end: the part of a request's
 * lifecycle that does not depend on where its stages run. Both the engine over local stage lanes
 * ({@link PipelineEngine}) and the engine over stages hosted on other nodes keep their requests here and only
 * decide how a step is sent and when a request may take one.
 *
 * <p>Owns, per request: its next input (the prompt, then the last sampled token), its position, the tokens generated
 * so far, the steps sent and whether one is in flight, its cancel and deadline marks, and its deadline timer. It owns
 * the admission count too: the caller increments {@code held} when it admits a request, the ledger decrements it
 * exactly once when the request ends.
 *
 * <p>Guarantees: a request's listener receives its tokens in order, then exactly one end; a request past its
 * deadline takes no further step (the deadline is checked at admission, when its timer fires while no step is in
 * flight, and after every sampled token, never after a step was sent); a cancel is reported at once, and a step in
 * flight then finishes unobserved, the request's state kept until it comes back; the engine's {@code onEnd} runs
 * once per request, before the admission slot is freed and the end is reported, so a caller that submits again
 * from the listener finds the slot free. A listener that throws fails only its own request: an exception from
 * {@code onToken} ends that request with a {@link ListenerFailedException} (its step's stage state dropped as for any
 * end), one from {@code onFinished} or {@code onFailed} is logged; neither reaches the owning actor.
 *
 * <p>Refuses: nothing is thread-safe; every method runs on the owning actor's thread, never blocks, and expects that
 * actor to turn the deadline messages its timers deliver into {@link #deadlineReached}.
 *
 * @param <C> the owning actor's command type
 */
public final class RequestLedger<C> {
    private static final Logger LOG = LoggerFactory.getLogger(RequestLedger.class);

    /** One request's state; the engine reads it, the ledger changes it. */
    public static final class Entry {
        private final long id;
        private final PipelineRequest request;
        private final EngineListener listener;
        private int position;
        private int[] nextInput;
        private int generated;
        private long stepsSent;
        private boolean inFlight;
        private boolean cancelled;
        private boolean deadlinePassed;
        private boolean reported;

        private Entry(long id, PipelineRequest request, EngineListener listener) {
            this.id = id;
            this.request = request;
            this.listener = listener;
            this.nextInput = request.promptIds();
        }

        /** The request id the engine was given. */
        public long id() {
            return id;
        }

        /** What was asked. */
        public PipelineRequest request() {
            return request;
        }

        /** The position of the first token of the next step's input. */
        public int position() {
            return position;
        }

        /** The next step's input: the prompt before the first step, the last sampled token afterwards (not to be changed). */
        public int[] nextInput() {
            return nextInput;
        }

        /** The steps sent so far; above zero, the stages may hold state (KV caches) of this request. */
        public long stepsSent() {
            return stepsSent;
        }

        /** Whether a step of this request is in flight. */
        public boolean inFlight() {
            return inFlight;
        }
    }

    /** The key of one request's deadline timer: distinct from any key of the owning actor's own timers. */
    private record DeadlineKey(long requestId) {
    }

    private final TimerScheduler<C> timers;
    private final LongFunction<? extends C> deadlineMessage;
    private final AtomicInteger held;
    private final Consumer<Entry> onEnd;
    private final Map<Long, Entry> entries = new LinkedHashMap<>();

    /**
     * A ledger whose deadline timers run on {@code timers} and deliver {@code deadlineMessage(requestId)} to the owning
     * actor; {@code held} is the admission count the caller increments; {@code onEnd} is what the engine drops when a
     * request ends (queue places, stage state), called once per request on the actor's thread.
     */
    public RequestLedger(TimerScheduler<C> timers, LongFunction<? extends C> deadlineMessage, AtomicInteger held,
                         Consumer<Entry> onEnd) {
        this.timers = timers;
        this.deadlineMessage = deadlineMessage;
        this.held = held;
        this.onEnd = onEnd;
    }

    /**
     * Holds {@code request} (already counted in {@code held}) as {@code id} and starts its deadline timer. Returns its
     * entry, or null when its deadline had already passed: it has then ended with a
     * {@link RequestDeadlineExceededException}.
     */
    public Entry admit(long id, PipelineRequest request, EngineListener listener) {
        Entry e = new Entry(id, request, listener);
        entries.put(id, e);
        long deadline = request.deadlineNanos();
        if (deadline != Long.MAX_VALUE) {
            long delay = deadline - System.nanoTime();
            if (delay <= 0) {
                end(e, null, new RequestDeadlineExceededException(id, 0));
                return null;
            }
            timers.startSingleTimer(new DeadlineKey(id), deadlineMessage.apply(id), Duration.ofNanos(delay));
        }
        return e;
    }

    /** The entry of request {@code id}, or null once it ended (or was never admitted). */
    public Entry get(long id) {
        return entries.get(id);
    }

    /** The number of requests held. */
    public int size() {
        return entries.size();
    }

    /** A step of {@code e} was sent with its {@link Entry#nextInput()} at its {@link Entry#position()}; returns the step's number (1, 2, …). */
    public long stepSent(Entry e) {
        e.inFlight = true;
        return ++e.stepsSent;
    }

    /**
     * The step in flight of {@code e} came back, done or failed. Returns false when the request was cancelled
     * meanwhile: it has now ended and nothing of the step may be published; true when the caller goes on with
     * {@link #tokenSampled}, {@link #fail} or a retry of the step.
     */
    public boolean stepReturned(Entry e) {
        e.inFlight = false;
        if (e.cancelled) {
            end(e, null, null);
            return false;
        }
        return true;
    }

    /**
     * Appends {@code token}, sampled by the step that consumed {@link Entry#nextInput()}, and reports it. Returns true
     * when the request goes on with the token as its next input; false when it ended: its end-of-sequence token, its
     * maximum number of tokens, or its deadline (checked before another step is sent).
     */
    public boolean tokenSampled(Entry e, int token) {
        return tokenSampled(e, SampledToken.of(token));
    }

    /** {@link #tokenSampled(Entry, int)} for a token that carries what was computed about it (its log-probabilities). */
    public boolean tokenSampled(Entry e, SampledToken sampled) {
        int token = sampled.id();
        e.position += e.nextInput.length;
        e.generated++;
        try {
            e.listener.onToken(sampled);
        } catch (RuntimeException thrown) {
            end(e, null, new ListenerFailedException(e.id, thrown));
            return false;
        }
        PipelineRequest r = e.request;
        if (r.endsSequence(token)) {
            end(e, EngineFinishReason.END_OF_SEQUENCE, null);
        } else if (e.generated >= r.maxNewTokens()) {
            end(e, EngineFinishReason.LENGTH, null);
        } else if (e.deadlinePassed || (r.deadlineNanos() != Long.MAX_VALUE && System.nanoTime() - r.deadlineNanos() >= 0)) {
            end(e, null, new RequestDeadlineExceededException(e.id, e.generated));
        } else {
            e.nextInput = new int[] {token};
            return true;
        }
        return false;
    }

    /** Ends {@code e} with {@code cause} (reported unless a cancel already was). */
    public void fail(Entry e, Throwable cause) {
        end(e, null, cause);
    }

    /**
     * Cancels request {@code id}: without a step in flight it ends at once; with one it is reported cancelled now and
     * ends when the step comes back ({@link #stepReturned}). Unknown, ended or already cancelled ids are ignored.
     */
    public void cancel(long id) {
        Entry e = entries.get(id);
        if (e == null || e.cancelled) {
            return;
        }
        e.cancelled = true;
        if (!e.inFlight) {
            end(e, null, new RequestCancelledException(id));
        } else {
            // The step in flight keeps what it retains until its exact completion; only its result goes unobserved.
            e.reported = true;
            reportFailure(e, new RequestCancelledException(id));
        }
    }

    /**
     * The deadline timer of request {@code id} fired: without a step in flight it ends at once with a
     * {@link RequestDeadlineExceededException}; with one it ends after that step's token. Ignored once it ended or
     * was cancelled.
     */
    public void deadlineReached(long id) {
        Entry e = entries.get(id);
        if (e == null || e.cancelled) {
            return;
        }
        if (e.inFlight) {
            e.deadlinePassed = true;
        } else {
            end(e, null, new RequestDeadlineExceededException(id, e.generated));
        }
    }

    /** Ends every request held, in admission order, each with {@code causeOf(id)} unless its cancel was already reported. */
    public void failAll(LongFunction<? extends Throwable> causeOf) {
        for (Entry e : List.copyOf(entries.values())) {
            end(e, null, e.reported ? null : causeOf.apply(e.id));
        }
    }

    /** Ends a request: drops it and its timer, lets the engine drop its part, frees its admission slot, reports it once. */
    private void end(Entry e, EngineFinishReason reason, Throwable failure) {
        if (entries.remove(e.id) == null) {
            return;
        }
        timers.cancel(new DeadlineKey(e.id));
        RuntimeException dropFailed = null;
        try {
            onEnd.accept(e);
        } catch (RuntimeException thrown) {
            dropFailed = thrown; // the engine's fault: rethrown once this request's slot is freed and its end reported
        }
        held.decrementAndGet();
        if (!e.reported) {
            report(e, reason, failure);
        }
        if (dropFailed != null) {
            throw dropFailed;
        }
    }

    private static void report(Entry e, EngineFinishReason reason, Throwable failure) {
        e.reported = true;
        if (reason != null) {
            try {
                e.listener.onFinished(reason);
            } catch (RuntimeException thrown) {
                LOG.warn("the listener of request {} failed on its end; the request had finished ({})", e.id, reason, thrown);
            }
        } else {
            reportFailure(e, failure != null ? failure : new RequestCancelledException(e.id));
        }
    }

    /** Reports {@code cause} to {@code e}'s listener; an exception it throws is logged, never passed to the actor. */
    private static void reportFailure(Entry e, Throwable cause) {
        try {
            e.listener.onFailed(cause);
        } catch (RuntimeException thrown) {
            LOG.warn("the listener of request {} failed on its failure ({})", e.id, cause.toString(), thrown);
        }
    }
}
