// Package batcher turns a worker's stream of output lines into the batches
// it publishes: few, large batches while no one watches (one stored item
// per batch instead of one per line), and prompt ones when someone does.
//
// Batcher is the generic core: it buffers items of any type and hands them
// to a flush function when the buffer reaches Config.MaxItems or
// Config.MaxBytes, when Config.FlushInterval has passed, QuickDelay after
// the first items of a quiet spell (so occasional output shows up at once),
// every WatchedInterval while SetWatched(true), before Do runs a function
// (the worker's process start, end and error events), and on Close. Each
// flush carries its Reason, which the worker's metrics count.
//
// OutputBatcher builds on it for one job attempt: it splits lines longer
// than the job's max_batch_bytes, turns each batch into an OUTPUT_BATCH
// event (events.Batch) with the next sequences, gives each process event
// an item of its own right after the lines before it, so sequences are
// continuous from the attempt's first one, and keeps OutputStats.
//
// Time comes from a Clock so tests can drive it; batchertest.Clock is a
// fake one whose Advance fires due timers synchronously.
package batcher
