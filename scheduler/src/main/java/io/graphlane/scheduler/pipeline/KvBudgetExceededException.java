package io.graphlane.scheduler.pipeline;

import io.graphlane.core.GraphlaneException;

/**
 * A request refused at admission because its own KV-cache reservation is larger than the engine's whole budget: it
 * could never run, however long it waited.
 */
public final class KvBudgetExceededException extends GraphlaneException {
    private static final long serialVersionUID = 1L;

    private final int promptTokens;
    private final int maxNewTokens;
    private final long reservation;
    private final long budget;

    /** A request of {@code promptTokens} plus {@code maxNewTokens} positions that needs {@code reservation} of {@code budget} bytes. */
    public KvBudgetExceededException(int promptTokens, int maxNewTokens, long reservation, KvBudget budget) {
        super("the prompt (" + promptTokens + " tokens) plus at most " + maxNewTokens + " new tokens needs " + reservation
                + " bytes of KV cache, more than the whole KV-cache budget of " + budget.bytes() + " bytes ("
                + budget.positions() + " positions); at most " + Math.max(0, budget.positions() - promptTokens)
                + " new tokens fit after this prompt");
        this.promptTokens = promptTokens;
        this.maxNewTokens = maxNewTokens;
        this.reservation = reservation;
        this.budget = budget.bytes();
    }

    /** The prompt's tokens. */
    public int promptTokens() {
        return promptTokens;
    }

    /** The most new tokens the request asked for. */
    public int maxNewTokens() {
        return maxNewTokens;
    }

    /** The bytes the request would reserve. */
    public long reservation() {
        return reservation;
    }

    /** The engine's whole budget, in bytes. */
    public long budget() {
        return budget;
    }
}
