// Package batcher groups items into batches that are flushed on size, on
// bytes, on time, before a critical event and on close.
//
// Batcher is the generic core: it knows nothing about what it batches, so
// job output, scatter items and consumed messages can share one set of
// flush rules and one set of tests. OutputBatcher builds on it to turn a
// job's output lines into OUTPUT_BATCH events with continuous sequences.
//
// Time comes from a Clock so tests can drive it; batchertest.Clock is a
// fake one whose Advance fires due timers synchronously.
package batcher
