// Package storekit is what the JobStore backends share, so each rule is
// written once and no two backends can drift apart:
//
//   - PlanAppend checks a publish against the log's head and the job's
//     batching config and says what to store (append.go);
//   - the life-cycle rules: when a lease is current, what a completion or
//     an expired lease leaves behind (lifecycle.go);
//   - the opaque listing cursor (cursor.go) and the long poll behind
//     Dequeue (longpoll.go);
//   - Feed, the replay-then-follow reader built on Read and Watch, which
//     every entrance that streams a log uses (feed.go).
//
// The seam itself (JobStore and its types) is package store; the backends
// are under store/backends; the suite that proves a backend keeps these
// rules is store/conformance.
package storekit
