/**
 * The public generation API: submit a {@link io.graphlane.inference.api.GenerationRequest} to a
 * {@link io.graphlane.inference.api.TextGenerator} and receive its tokens in order. The
 * pipeline-parallel engine implements it embedded in a JVM; the HTTP server serves it.
 */
package io.graphlane.inference.api;
