package io.graphlane.core.graph;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * A validated graph of operations placed on lanes. Built only through {@link Builder#build()},
 * which refuses unknown lanes, duplicate node ids, dependencies on nodes that do not exist and
 * cycles, naming each. Nodes are kept in a topological order (a node after all its producers,
 * ties in insertion order), which is also a valid submission order.
 *
 * @param <W> backend-native work
 */
public final class LaneGraph<W> {
    private final List<LaneId> lanes;
    private final List<GraphNode<W>> nodes;
    private final Map<String, GraphNode<W>> byId;
    private final Map<String, List<String>> consumers;

    private LaneGraph(List<LaneId> lanes, List<GraphNode<W>> topological) {
        this.lanes = List.copyOf(lanes);
        this.nodes = List.copyOf(topological);
        Map<String, GraphNode<W>> index = new LinkedHashMap<>();
        Map<String, List<String>> out = new HashMap<>();
        for (GraphNode<W> n : topological) {
            index.put(n.id(), n);
            out.putIfAbsent(n.id(), new ArrayList<>());
            for (String p : n.dependsOn()) {
                out.computeIfAbsent(p, k -> new ArrayList<>()).add(n.id());
            }
        }
        this.byId = Collections.unmodifiableMap(index);
        Map<String, List<String>> frozen = new HashMap<>();
        out.forEach((k, v) -> frozen.put(k, List.copyOf(v)));
        this.consumers = Collections.unmodifiableMap(frozen);
    }

    public static <W> Builder<W> builder() {
        return new Builder<>();
    }

    /** The lanes, in declaration order. */
    public List<LaneId> lanes() {
        return lanes;
    }

    /** Every node, producers before consumers. */
    public List<GraphNode<W>> nodes() {
        return nodes;
    }

    public GraphNode<W> node(String id) {
        GraphNode<W> n = byId.get(id);
        if (n == null) {
            throw new IllegalArgumentException("no node '" + id + "' in this graph");
        }
        return n;
    }

    /** The nodes that depend directly on {@code id}. */
    public List<String> consumersOf(String id) {
        return consumers.getOrDefault(id, List.of());
    }

    /** Every node that depends on {@code id}, directly or through others. */
    public Set<String> dependentsOf(String id) {
        Set<String> seen = new LinkedHashSet<>();
        Deque<String> todo = new ArrayDeque<>(consumersOf(id));
        while (!todo.isEmpty()) {
            String next = todo.pop();
            if (seen.add(next)) {
                todo.addAll(consumersOf(next));
            }
        }
        return seen;
    }

    public int size() {
        return nodes.size();
    }

    /** Collects lanes and nodes; {@link #build()} validates them. */
    public static final class Builder<W> {
        private final List<LaneId> lanes = new ArrayList<>();
        private final List<GraphNode<W>> nodes = new ArrayList<>();

        public Builder<W> lane(String name) {
            return lane(LaneId.of(name));
        }

        public Builder<W> lane(LaneId lane) {
            lanes.add(lane);
            return this;
        }

        /** Adds node {@code id} on {@code lane}, run after {@code dependsOn}. */
        public Builder<W> node(String id, String lane, W work, String... dependsOn) {
            return node(new GraphNode<>(id, LaneId.of(lane), work, List.of(dependsOn), List.of()));
        }

        public Builder<W> node(GraphNode<W> node) {
            nodes.add(node);
            return this;
        }

        /**
         * Validates and returns the graph.
         *
         * @throws GraphValidationException listing every problem: duplicate lanes or node ids, unknown
         *     lanes, dependencies on missing nodes, self-dependencies and cycles (with the path)
         */
        public LaneGraph<W> build() {
            List<String> problems = new ArrayList<>();
            Set<LaneId> laneSet = new LinkedHashSet<>();
            for (LaneId lane : lanes) {
                if (!laneSet.add(lane)) {
                    problems.add("duplicate lane '" + lane + "'");
                }
            }
            Map<String, GraphNode<W>> byId = new LinkedHashMap<>();
            for (GraphNode<W> n : nodes) {
                if (byId.putIfAbsent(n.id(), n) != null) {
                    problems.add("duplicate node id '" + n.id() + "'");
                }
                if (!laneSet.contains(n.lane())) {
                    problems.add("node '" + n.id() + "' is placed on unknown lane '" + n.lane() + "' (lanes: "
                            + laneSet.stream().map(LaneId::name).collect(Collectors.joining(", ")) + ")");
                }
            }
            for (GraphNode<W> n : nodes) {
                for (String p : n.dependsOn()) {
                    if (p.equals(n.id())) {
                        problems.add("node '" + n.id() + "' depends on itself");
                    } else if (!byId.containsKey(p)) {
                        problems.add("node '" + n.id() + "' depends on '" + p + "', which is not in the graph");
                    }
                }
            }
            if (!problems.isEmpty()) {
                throw new GraphValidationException(problems);
            }
            List<GraphNode<W>> order = topologicalOrder(byId);
            if (order == null) {
                throw new GraphValidationException(List.of("cycle: " + String.join(" -> ", findCycle(byId))));
            }
            return new LaneGraph<>(lanes, order);
        }

        /** Kahn's algorithm, ties broken by insertion order; null if there is a cycle. */
        private static <W> List<GraphNode<W>> topologicalOrder(Map<String, GraphNode<W>> byId) {
            Map<String, Integer> missing = new HashMap<>();
            Map<String, List<String>> consumers = new HashMap<>();
            for (GraphNode<W> n : byId.values()) {
                Set<String> distinct = new HashSet<>(n.dependsOn());
                missing.put(n.id(), distinct.size());
                for (String p : distinct) {
                    consumers.computeIfAbsent(p, k -> new ArrayList<>()).add(n.id());
                }
            }
            List<String> ids = new ArrayList<>(byId.keySet());
            Map<String, Integer> position = new HashMap<>();
            for (int i = 0; i < ids.size(); i++) {
                position.put(ids.get(i), i);
            }
            java.util.PriorityQueue<String> ready = new java.util.PriorityQueue<>((a, b) -> position.get(a) - position.get(b));
            for (String id : ids) {
                if (missing.get(id) == 0) {
                    ready.add(id);
                }
            }
            List<GraphNode<W>> order = new ArrayList<>(ids.size());
            while (!ready.isEmpty()) {
                String id = ready.poll();
                order.add(byId.get(id));
                for (String c : consumers.getOrDefault(id, List.of())) {
                    if (missing.merge(c, -1, Integer::sum) == 0) {
                        ready.add(c);
                    }
                }
            }
            return order.size() == ids.size() ? order : null;
        }

        /** One cycle, as a closed path of node ids. */
        private static <W> List<String> findCycle(Map<String, GraphNode<W>> byId) {
            Map<String, Integer> state = new HashMap<>(); // 1 = on stack, 2 = done
            for (String start : byId.keySet()) {
                if (state.containsKey(start)) {
                    continue;
                }
                Deque<String> path = new ArrayDeque<>();
                Deque<java.util.Iterator<String>> iters = new ArrayDeque<>();
                path.push(start);
                iters.push(byId.get(start).dependsOn().iterator());
                state.put(start, 1);
                while (!path.isEmpty()) {
                    java.util.Iterator<String> it = iters.peek();
                    if (it.hasNext()) {
                        String next = it.next();
                        Integer s = state.get(next);
                        if (s == null) {
                            state.put(next, 1);
                            path.push(next);
                            iters.push(byId.get(next).dependsOn().iterator());
                        } else if (s == 1) {
                            List<String> stack = new ArrayList<>(path);
                            Collections.reverse(stack); // start ... current
                            List<String> cycle = new ArrayList<>(stack.subList(stack.indexOf(next), stack.size()));
                            cycle.add(next);
                            Collections.reverse(cycle); // as producer -> consumer order
                            return cycle;
                        }
                    } else {
                        state.put(path.pop(), 2);
                        iters.pop();
                    }
                }
            }
            return List.of();
        }
    }
}
