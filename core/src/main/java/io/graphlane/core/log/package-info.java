/**
 * Logging helpers that need nothing but the JDK: {@link io.graphlane.core.log.WarningGate} bounds how many warnings a
 * flood of bad input can write.
 */
package io.graphlane.core.log;
