package io.graphlane.inference.llama;

import io.graphlane.core.GraphlaneException;
import java.util.Set;

/**
 * An expert rank failed a sparse layer's step: the rows routed to its experts have no result. {@link #rows} are the
 * step's rows that were routed there; once the decoder layers map them to requests, {@link #requests} names the
 * requests affected, so that a caller can fail those and run the step again for the others.
 */
public final class ExpertRankFailedException extends GraphlaneException {
    private final int rank;
    private final int[] rows;
    private final Set<Long> requests;

    /** Rank {@code rank} failed the rows {@code rows} of a step, for {@code message}; {@code cause} is its failure. */
    public ExpertRankFailedException(String message, int rank, int[] rows, Throwable cause) {
        this(message, rank, rows, Set.of(), cause);
    }

    private ExpertRankFailedException(String message, int rank, int[] rows, Set<Long> requests, Throwable cause) {
        super(message, cause);
        this.rank = rank;
        this.rows = rows.clone();
        this.requests = Set.copyOf(requests);
    }

    /** The expert rank that failed. */
    public int rank() {
        return rank;
    }

    /** The step's rows routed to the failed rank. */
    public int[] rows() {
        return rows.clone();
    }

    /** The requests whose rows were routed to the failed rank (empty until the decoder layers named them). */
    public Set<Long> requests() {
        return requests;
    }

    /** This failure naming {@code affected} as the requests it hits. */
    public ExpertRankFailedException withRequests(Set<Long> affected) {
        ExpertRankFailedException e = new ExpertRankFailedException(getMessage() + "; requests affected: " + affected, rank, rows,
                affected, getCause());
        return e;
    }
}
