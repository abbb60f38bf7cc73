package io.graphlane.actors.residency;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The residency bookkeeping of one device, as CONTRACTS.md (TransferBackend) states it: which units
 * (weights) have a device copy, the bytes that copies and in-flight transfers hold against the
 * device budget, and a transfer generation per unit that only increases.
 * <ul>
 *   <li>Budgets are admitted atomically per batch: every unit of the batch gets its bytes, or none
 *       does and the refusal names the units that block it.</li>
 *   <li>A copy is counted resident (published) only once its transfer completed successfully.</li>
 *   <li>A result carrying a generation that is no longer the unit's current one is stale and ignored;
 *       the bytes its transfer held are returned when that exact transfer ends.</li>
 *   <li>Pinned, leased and in-flight copies are never evicted; a copy without a host copy is never
 *       evicted either (its data would be lost): demote it first.</li>
 *   <li>A demotion keeps the device copy (and its bytes) until the host copy completed; if the copy
 *       fails, the device copy stays resident.</li>
 * </ul>
 * Single-threaded: the {@link ResidencyActor} of the device is its only caller.
 */
public final class ResidencyLedger {

    /** Where a unit's device copy stands. */
    public enum DeviceState {
        /** No device copy, no bytes held. */
        ABSENT,
        /** A promotion is in flight: its bytes are reserved, the copy is not usable yet. */
        PROMOTING,
        /** The device copy is published and usable. */
        RESIDENT,
        /** A demotion is in flight: the device copy stays usable and keeps its bytes until it ends. */
        DEMOTING
    }

    /** What became of a transfer's result. */
    public enum Result {
        /** The result was current and is now reflected (a copy published or a host copy recorded). */
        APPLIED,
        /** The current transfer failed; a promotion returned its bytes, a demotion fell back to the device copy. */
        FAILED,
        /** The result belongs to an older generation and was ignored. */
        STALE
    }

    /** A transfer the caller must now start: unit {@code name} under generation {@code generation}. */
    public record Ticket(String name, long generation) { }

    /** The outcome of {@link #admit}. */
    public sealed interface Admission permits Admitted, Refused { }

    /**
     * The batch was admitted: {@code promotions} must be started, {@code evicted} units lost their
     * device copy to make room (their host copies remain), {@code alreadyThere} needed nothing.
     */
    public record Admitted(List<Ticket> promotions, List<String> evicted, List<String> alreadyThere) implements Admission { }

    /** Nothing of the batch was admitted: it needs {@code neededBytes}, at most {@code obtainableBytes} could be made free. */
    public record Refused(long neededBytes, long obtainableBytes, List<String> blockers, String message) implements Admission { }

    private static final class Unit {
        final String name;
        final long bytes;
        boolean hostCopy;
        DeviceState state = DeviceState.ABSENT;
        long generation;
        int pins;
        int leases;
        long lastUse;

        Unit(String name, long bytes, boolean hostCopy) {
            this.name = name;
            this.bytes = bytes;
            this.hostCopy = hostCopy;
        }

        boolean holdsBytes() {
            return state != DeviceState.ABSENT;
        }
    }

    private final String device;
    private final long budgetBytes;
    private final Map<String, Unit> units = new LinkedHashMap<>();
    private final Map<Long, Long> abandonedTransfers = new HashMap<>();
    private long reservedBytes;
    private long nextGeneration = 1;
    private long clock;

    /** A ledger for {@code device} whose copies may hold at most {@code budgetBytes}. */
    public ResidencyLedger(String device, long budgetBytes) {
        this.device = Objects.requireNonNull(device, "device");
        if (budgetBytes < 0) {
            throw new IllegalArgumentException("device " + device + ": budget must be >= 0 bytes, found " + budgetBytes);
        }
        this.budgetBytes = budgetBytes;
    }

    /**
     * Registers a unit of {@code bytes} that has a host copy and no device copy yet.
     *
     * @throws ResidencyException naming the unit if it is already registered
     */
    public void register(String name, long bytes) {
        Objects.requireNonNull(name, "name");
        if (bytes < 0) {
            throw new IllegalArgumentException("unit " + name + ": size must be >= 0 bytes, found " + bytes);
        }
        if (units.containsKey(name)) {
            throw new ResidencyException("device " + device + ": unit " + name + " is already registered");
        }
        units.put(name, new Unit(name, bytes, true));
    }

    /**
     * Admits the batch {@code names} all or nothing: reserves the bytes of every unit without a
     * device copy, evicting least recently used evictable copies outside the batch if needed, and
     * returns the promotions to start; or changes nothing and names the blockers.
     */
    public Admission admit(List<String> names) {
        Set<String> batch = new HashSet<>();
        List<Unit> toPromote = new ArrayList<>();
        List<String> alreadyThere = new ArrayList<>();
        long needed = 0;
        for (String name : names) {
            Unit u = unit(name);
            if (!batch.add(name)) {
                continue;
            }
            if (u.state == DeviceState.ABSENT) {
                toPromote.add(u);
                needed += u.bytes;
            } else {
                alreadyThere.add(name);
            }
        }
        long free = budgetBytes - reservedBytes;
        List<Unit> evict = new ArrayList<>();
        if (needed > free) {
            List<Unit> candidates = units.values().stream()
                    .filter(u -> !batch.contains(u.name) && evictionBlocker(u) == null && u.state == DeviceState.RESIDENT)
                    .sorted(Comparator.comparingLong((Unit u) -> u.lastUse))
                    .toList();
            long obtainable = free;
            for (Unit u : candidates) {
                if (obtainable >= needed) {
                    break;
                }
                evict.add(u);
                obtainable += u.bytes;
            }
            if (obtainable < needed) {
                long allEvictable = free + candidates.stream().mapToLong(u -> u.bytes).sum();
                List<String> blockers = new ArrayList<>();
                for (Unit u : units.values()) {
                    if (u.holdsBytes() && !batch.contains(u.name)) {
                        String why = evictionBlocker(u);
                        if (why != null) {
                            blockers.add(u.name + " (" + why + ", " + u.bytes + " bytes)");
                        }
                    }
                }
                if (!abandonedTransfers.isEmpty()) {
                    blockers.add(abandonedTransfers.size() + " abandoned transfer(s) still in flight ("
                            + abandonedTransfers.values().stream().mapToLong(Long::longValue).sum() + " bytes)");
                }
                String message = "device " + device + ": batch " + names + " needs " + needed + " bytes, only "
                        + allEvictable + " of the budget of " + budgetBytes + " can be made free; blocked by "
                        + (blockers.isEmpty() ? "nothing else (the batch alone exceeds the budget)" : String.join(", ", blockers));
                return new Refused(needed, allEvictable, blockers, message);
            }
        }
        List<String> evicted = new ArrayList<>();
        for (Unit u : evict) {
            u.state = DeviceState.ABSENT;
            reservedBytes -= u.bytes;
            evicted.add(u.name);
        }
        List<Ticket> tickets = new ArrayList<>();
        for (Unit u : toPromote) {
            u.state = DeviceState.PROMOTING;
            u.generation = nextGeneration++;
            u.lastUse = ++clock;
            reservedBytes += u.bytes;
            tickets.add(new Ticket(u.name, u.generation));
        }
        for (String name : alreadyThere) {
            units.get(name).lastUse = ++clock;
        }
        return new Admitted(tickets, evicted, alreadyThere);
    }

    /** Records the end of the promotion of {@code name} under {@code generation}; a stale generation changes nothing but its own bytes. */
    public Result completePromotion(String name, long generation, boolean succeeded) {
        Unit u = unit(name);
        Long orphan = abandonedTransfers.remove(generation);
        if (orphan != null) {
            reservedBytes -= orphan;
            return Result.STALE;
        }
        if (u.state != DeviceState.PROMOTING || u.generation != generation) {
            return Result.STALE;
        }
        if (succeeded) {
            u.state = DeviceState.RESIDENT;
            return Result.APPLIED;
        }
        u.state = DeviceState.ABSENT;
        reservedBytes -= u.bytes;
        return Result.FAILED;
    }

    /**
     * Starts demoting {@code name}: its device copy stays resident (and keeps its bytes) until the demotion ends.
     *
     * @throws ResidencyException naming the unit and its state if it is not resident, or is pinned or leased
     */
    public Ticket beginDemotion(String name) {
        Unit u = unit(name);
        if (u.state != DeviceState.RESIDENT) {
            throw new ResidencyException("device " + device + ": cannot demote " + name + ": expected a RESIDENT copy, found " + u.state);
        }
        if (u.pins > 0 || u.leases > 0) {
            throw new ResidencyException("device " + device + ": cannot demote " + name + ": it is "
                    + (u.pins > 0 ? "pinned (" + u.pins + ")" : "leased by running work (" + u.leases + ")"));
        }
        u.state = DeviceState.DEMOTING;
        u.generation = nextGeneration++;
        return new Ticket(name, u.generation);
    }

    /** Records the end of the demotion of {@code name}: success frees the device copy, failure keeps it resident. */
    public Result completeDemotion(String name, long generation, boolean succeeded) {
        Unit u = unit(name);
        if (u.state != DeviceState.DEMOTING || u.generation != generation) {
            return Result.STALE;
        }
        if (succeeded) {
            u.hostCopy = true;
            u.state = DeviceState.ABSENT;
            reservedBytes -= u.bytes;
            return Result.APPLIED;
        }
        u.state = DeviceState.RESIDENT;
        return Result.FAILED;
    }

    /**
     * Gives up on the in-flight promotion of {@code name}: the unit counts as absent at once (a new
     * promotion gets a newer generation), the abandoned transfer's late result will be stale, and its
     * bytes stay reserved until that exact transfer ends.
     *
     * @return the abandoned generation
     * @throws ResidencyException naming the unit if no promotion of it is in flight
     */
    public long abandonPromotion(String name) {
        Unit u = unit(name);
        if (u.state != DeviceState.PROMOTING) {
            throw new ResidencyException("device " + device + ": cannot abandon the promotion of " + name
                    + ": expected PROMOTING, found " + u.state);
        }
        abandonedTransfers.put(u.generation, u.bytes);
        u.state = DeviceState.ABSENT;
        return u.generation;
    }

    /**
     * Drops the device copy of {@code name} now.
     *
     * @throws ResidencyException naming the unit and what blocks it (pinned, leased, in flight, no host copy, absent)
     */
    public void evict(String name) {
        Unit u = unit(name);
        String why = u.state == DeviceState.ABSENT ? "it has no device copy" : evictionBlocker(u);
        if (why != null) {
            throw new ResidencyException("device " + device + ": cannot evict " + name + ": " + why);
        }
        u.state = DeviceState.ABSENT;
        reservedBytes -= u.bytes;
    }

    /**
     * Records that the host copy of {@code name} was dropped; its device copy is then the only one and
     * is never evicted until a demotion made a host copy again.
     *
     * @throws ResidencyException naming the unit if its device copy is not published: the data would be lost
     */
    public void dropHostCopy(String name) {
        Unit u = unit(name);
        if (u.state != DeviceState.RESIDENT) {
            throw new ResidencyException("device " + device + ": cannot drop the host copy of " + name
                    + ": expected a RESIDENT device copy, found " + u.state);
        }
        u.hostCopy = false;
    }

    /** Pins the device copy of {@code name} (it is never evicted while pinned); works in any state. */
    public void pin(String name) {
        unit(name).pins++;
    }

    /** Drops one pin of {@code name}. */
    public void unpin(String name) {
        Unit u = unit(name);
        if (u.pins == 0) {
            throw new ResidencyException("device " + device + ": unit " + name + " is not pinned");
        }
        u.pins--;
    }

    /**
     * Leases the published device copy of {@code name} to running work: never evicted or demoted while leased.
     *
     * @throws ResidencyException naming the unit if its copy is not published (absent or still promoting)
     */
    public void lease(String name) {
        Unit u = unit(name);
        if (u.state != DeviceState.RESIDENT && u.state != DeviceState.DEMOTING) {
            throw new ResidencyException("device " + device + ": cannot lease " + name + ": expected a published copy, found " + u.state);
        }
        u.leases++;
        u.lastUse = ++clock;
    }

    /** Ends one lease of {@code name}. */
    public void unlease(String name) {
        Unit u = unit(name);
        if (u.leases == 0) {
            throw new ResidencyException("device " + device + ": unit " + name + " is not leased");
        }
        u.leases--;
    }

    /** The state of the device copy of {@code name}. */
    public DeviceState state(String name) {
        return unit(name).state;
    }

    /** The generation of the last transfer of {@code name} (0 before any). */
    public long generation(String name) {
        return unit(name).generation;
    }

    /** True if {@code name} has a host copy. */
    public boolean hasHostCopy(String name) {
        return unit(name).hostCopy;
    }

    /** Bytes held against the budget: copies, in-flight transfers and abandoned transfers not yet ended. */
    public long reservedBytes() {
        return reservedBytes;
    }

    /** The device budget in bytes. */
    public long budgetBytes() {
        return budgetBytes;
    }

    /** True if {@code name} is registered. */
    public boolean contains(String name) {
        return units.containsKey(name);
    }

    private String evictionBlocker(Unit u) {
        if (u.state == DeviceState.PROMOTING || u.state == DeviceState.DEMOTING) {
            return "in flight";
        }
        if (u.pins > 0) {
            return "pinned";
        }
        if (u.leases > 0) {
            return "leased";
        }
        if (!u.hostCopy) {
            return "no host copy";
        }
        return null;
    }

    private Unit unit(String name) {
        Unit u = units.get(Objects.requireNonNull(name, "name"));
        if (u == null) {
            throw new ResidencyException("device " + device + ": unknown unit " + name);
        }
        return u;
    }
}
