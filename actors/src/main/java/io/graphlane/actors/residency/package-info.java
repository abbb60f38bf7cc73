/**
 * Residency: which weights have a device copy, and the one actor per device that moves them.
 *
 * <p>Owns: {@link io.graphlane.actors.residency.ResidencyLedger} (budget, generations, pins and leases; plain Java,
 * reusable by any backend) and {@link io.graphlane.actors.residency.ResidencyActor} (serializes promote/demote of
 * one device over any {@link io.graphlane.core.backend.TransferBackend}).
 *
 * <p>Guarantees (CONTRACTS.md, TransferBackend): a batch's budget is admitted all or nothing and a refusal names
 * its blockers; generations only increase and a stale late result is ignored (its bytes are returned when that
 * exact transfer ends); a copy is published only after its transfer's exact completion succeeded; pinned, leased
 * and in-flight copies, and copies without a host copy, are never evicted; a demotion keeps the device copy until
 * the host copy completed and keeps it resident if the copy failed.
 *
 * <p>Refuses: unknown units, demoting or leasing a copy that is not published, demoting a pinned or leased copy,
 * evicting a copy that may not be evicted, a batch that cannot fit.
 */
package io.graphlane.actors.residency;
