/**
 * Expert parallelism for mixture-of-experts models: the experts of every sparse layer split over expert lanes, token
 * rows dispatched to the lanes owning their chosen experts with the backend's all-to-all collective and combined
 * with a second one, weighted by the router. See docs/moe.md.
 */
package io.graphlane.inference.moe;
