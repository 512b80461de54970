// Package spool holds what every user of spool's Go packages shares: the
// errors that calls return, which callers test with errors.Is, and spool's
// own types of what the calls hand back: a Job with its State, Params and
// Result (and, for a job that waits, its RunAfter and After; for one that
// tells URLs of its end, its Deliveries); a job's log as Events and Lines;
// Queues, Keys with their Role, Scatters with their ScatterState, and
// Schedules (periodic jobs) with their Overlap and Missed policies.
//
// spool is a job runner with cheap, replayable, live output. The packages
// around this one are:
//
//   - client: submit jobs, list and cancel them, replay and follow their
//     output from any line.
//   - server: run a spool server inside a program.
//   - worker: run a spool worker inside a program.
//   - spooltest: start a real server and worker in a Go test, and assert
//     what the jobs did.
//   - consumer: consume Kafka (or Event Hubs) in batches.
//   - itembatch: cut a scatter's items into batches.
//
// The wire contract (gRPC, gRPC-Web and Connect JSON on one port) is in
// api/spool/v1, with its generated Go code in gen/spool/v1. The Go types
// here are spool's, not the wire's: a change to the wire's schema is not a
// change to the Go API.
package spool
