package io.graphlane.cluster;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.TreeSet;

/**
 * Ranks for the members of a complete cluster: a member that claims a rank (its {@code graphlane-rank-R} role)
 * keeps it; the others take the free ranks in ascending order, in the order of their addresses (host, then
 * port). The same membership gives the same ranks on every node.
 */
public final class RankAssignment {
    private RankAssignment() {
    }

    /** One Up member: its address and the rank it claims, if any. */
    public record Candidate(String host, int port, OptionalInt claimed) {
        /** The member's address as {@code host:port}. */
        public String address() {
            return host + ":" + port;
        }
    }

    /**
     * The rank of every candidate, keyed by {@link Candidate#address()}.
     *
     * @throws ClusterConfigException if there are more candidates than {@code nodes}, a claimed rank is outside
     *     {@code [0, nodes)}, or two candidates claim the same rank (naming them)
     */
    public static Map<String, Integer> assign(List<Candidate> candidates, int nodes) {
        if (candidates.size() > nodes) {
            throw new ClusterConfigException("cluster has " + candidates.size() + " members Up but --nodes is " + nodes
                    + ": " + candidates.stream().map(Candidate::address).toList());
        }
        Map<Integer, String> claimedBy = new LinkedHashMap<>();
        for (Candidate c : candidates) {
            if (c.claimed().isEmpty()) {
                continue;
            }
            int r = c.claimed().getAsInt();
            if (r < 0 || r >= nodes) {
                throw new ClusterConfigException("member " + c.address() + " claims rank " + r + ", outside [0, " + nodes + ")");
            }
            String other = claimedBy.putIfAbsent(r, c.address());
            if (other != null) {
                throw new ClusterConfigException("rank " + r + " is claimed by two members: " + other + " and " + c.address()
                        + "; give each node its own --rank");
            }
        }
        TreeSet<Integer> free = new TreeSet<>();
        for (int r = 0; r < nodes; r++) {
            if (!claimedBy.containsKey(r)) {
                free.add(r);
            }
        }
        List<Candidate> unclaimed = new ArrayList<>(candidates.stream().filter(c -> c.claimed().isEmpty()).toList());
        unclaimed.sort(Comparator.comparing(Candidate::host).thenComparingInt(Candidate::port));
        Map<String, Integer> ranks = new LinkedHashMap<>();
        claimedBy.forEach((rank, address) -> ranks.put(address, rank));
        for (Candidate c : unclaimed) {
            ranks.put(c.address(), free.pollFirst());
        }
        return ranks;
    }
}
