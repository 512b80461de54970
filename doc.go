// Package spool holds what every user of spool's Go packages shares: the
// errors that calls return, which callers test with errors.Is, and the job
// states with their names.
//
// spool is a job runner with cheap, replayable, live output. The packages
// around this one are:
//
//   - client: submit jobs, list and cancel them, replay and follow their
//     output from any line.
//   - server: run a spool server inside a program.
//   - worker: run a spool worker inside a program.
//   - spooltest: start a real server and worker in a Go test.
//
// The wire contract (gRPC, gRPC-Web and Connect JSON on one port) is in
// api/spool/v1; its generated Go code is gen/spool/v1.
package spool
