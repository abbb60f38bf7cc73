/**
 * Strict JSON reading for checkpoint files (safetensors headers, shard indexes, config.json).
 * Owns the parser settings; guarantees that duplicate keys, trailing garbage, non-standard
 * literals and deep nesting are refused with a one-line reason; refuses to interpret values
 * (that is the caller's job, which names the file and field).
 */
package io.graphlane.checkpoint.json;
