/**
 * JMH microbenchmarks of graphlane's hot paths; not part of the default test run.
 *
 * <p>Owns: {@link io.graphlane.bench.LaneBench} (graph runs through lane actors against the bare CPU
 * backend, independent and cross-lane chains) and {@link io.graphlane.bench.TraceBench} (the cost of a
 * trace recording site, off and on). See {@code bench/README.md} for how to run them. Guarantees
 * nothing about figures on other machines; refuses to run from {@code mvn verify}.
 */
package io.graphlane.bench;
