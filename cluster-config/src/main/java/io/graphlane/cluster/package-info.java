/**
 * Pekko Cluster deployment of graphlane: configuration profiles, readiness, ranks, stage placement and the
 * cluster node.
 *
 * <p>Owns: the profiles of {@code reference.conf} ({@code local}, {@code static}, {@code kubernetes}, and
 * {@code tls} on top), {@link io.graphlane.cluster.NodeConfig} (layering a node's own values over its profile),
 * {@link io.graphlane.cluster.NodeReadiness} with the Management readiness and liveness checks,
 * {@link io.graphlane.cluster.RankAssignment}, {@link io.graphlane.cluster.StagePlacement} and
 * {@link io.graphlane.cluster.GraphlaneNode} with its {@link io.graphlane.cluster.NodeGuardian}.
 *
 * <p>Guarantees:
 * <ul>
 *   <li>Every node runs Pekko Management HTTP; Management is started before Cluster Bootstrap.</li>
 *   <li>Readiness (GET /ready) turns true only when the node is an Up member, its stage lanes are up and
 *       registered with the Receptionist, and their weights are bound; liveness (GET /alive) turns false once a
 *       fatal failure is recorded.</li>
 *   <li>Ranks are given or derived deterministically from membership; the same membership gives the same ranks on
 *       every node. Stage i is hosted by rank i mod N.</li>
 *   <li>Split brain resolver keep-majority under every profile.</li>
 * </ul>
 *
 * <p>Refuses: two members claiming one rank, more Up members than {@code --nodes}, out-of-range ranks, ports and
 * stage counts, with errors naming the option and the values.
 */
package io.graphlane.cluster;
