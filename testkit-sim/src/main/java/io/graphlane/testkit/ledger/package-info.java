/**
 * Ledgers of resources held against completions: {@link io.graphlane.testkit.ledger.RetentionLedger}
 * records every acquisition, every completion a resource is held until, every release and every
 * on-purpose leak, in one total order.
 *
 * <p>Guarantees: its assertions name the resource, its completions and the events at fault; an entry is
 * an {@link java.lang.AutoCloseable}, so any backend's {@code retainUntilComplete} (or a lease holder)
 * records its release by closing it, and a release is always recorded, even a wrong one. It serves
 * retained values and leases alike: acquire first, tie to completions later.
 *
 * <p>Refuses nothing at record time: a double or early release is recorded and reported by the
 * assertions (as {@link java.lang.AssertionError}s for test frameworks), never thrown at the
 * backend that made it.
 */
package io.graphlane.testkit.ledger;
