package io.graphlane.core.completion;

/**
 * The failure of work that never ran because a producer it was ordered after failed.
 * It names the producer that failed first (the root), however long the chain of
 * poisoned work between them, and carries the root's own cause.
 */
public final class PoisonedPreconditionException extends CompletionFailedException {
    private static final long serialVersionUID = 1L;

    private final String rootProducer;
    private final String directProducer;

    private PoisonedPreconditionException(String consumer, String directProducer, String rootProducer, Throwable rootCause) {
        super("poisoned precondition: " + consumer + " did not run because " + rootProducer + " failed"
                + (directProducer.equals(rootProducer) ? "" : " (reached through " + directProducer + ")")
                + ": " + rootCause.getMessage(), rootCause);
        this.rootProducer = rootProducer;
        this.directProducer = directProducer;
    }

    /**
     * The failure of {@code consumer}, ordered after {@code producer} that failed with {@code producerCause}.
     * If the producer was itself poisoned, the root producer and root cause are carried over.
     */
    public static PoisonedPreconditionException of(String consumer, String producer, Throwable producerCause) {
        if (producerCause instanceof PoisonedPreconditionException upstream) {
            return new PoisonedPreconditionException(consumer, producer, upstream.rootProducer, upstream.getCause());
        }
        return new PoisonedPreconditionException(consumer, producer, producer, producerCause);
    }

    /** The label of the producer whose own work failed first. */
    public String rootProducer() {
        return rootProducer;
    }

    /** The label of the precondition this work was directly ordered after. */
    public String directProducer() {
        return directProducer;
    }

    /** The failure of the root producer's own work. */
    public Throwable rootCause() {
        return getCause();
    }
}
