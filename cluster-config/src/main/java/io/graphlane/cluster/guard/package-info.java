/**
 * What stands between a node's Artery and the network when Artery runs plain TCP.
 *
 * <p>Owns: {@link io.graphlane.cluster.guard.ArteryEndpoint}, which refuses plain TCP off loopback unless
 * {@code --allow-plaintext}, and starts the {@link io.graphlane.cluster.guard.ArteryFrameGuard} that Artery's peers
 * connect to.
 *
 * <p>Guarantees: no byte reaches Artery from a connection that has not sent Artery's connection header within the
 * deadline; every frame Artery reads has a length within its stream's maximum and at least an envelope header, and
 * protocol version 0; a connection that breaks the framing ends for Artery on a frame boundary; refusals cost at most
 * one warning per 10 s.
 *
 * <p>Refuses: connections over the total or per-address caps, silent ones past the header deadline, a bad magic,
 * stream id, frame length or version. It does not authenticate: any peer that speaks Artery's framing gets through,
 * so plain TCP stays for loopback and trusted networks, and {@code --tls} is the protection elsewhere.
 */
package io.graphlane.cluster.guard;
