// Package storemetrics measures a store.JobStore from the outside: Wrap
// returns the store with every call counted and timed by operation, its
// errors counted by kind, and the retries and throttles its backend
// reports (store.RetryReporter) counted beside them. One wrapper serves
// every backend, so SQLite, PostgreSQL and AWS are measured alike, and a
// backend added later is measured without a line of its own.
//
// The wrapper keeps the store's optional capabilities (store.Capabilities):
// each one the backend offers is offered again, measured, and none it
// lacks is made up, since the service core decides by their presence.
//
// Attributes are few and fixed: the operation, the store's type and, for
// errors, the kind. Never a job id, a queue or a key: a series per job
// would grow without end. The attribute sets are made once, at Wrap, so a
// call costs two clock readings and one histogram record, and nothing is
// allocated for it.
package storemetrics
