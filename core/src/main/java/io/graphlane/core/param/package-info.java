/**
 * What the parameter contract needs from checkpoints, without depending on the checkpoint
 * module: leases on encoded tensor bytes, derived-weight recipes, and in-flight
 * materializations that own their leases until their exact completion.
 */
package io.graphlane.core.param;
