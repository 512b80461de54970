package storemetrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/telemetry"
)

// durationBuckets are in seconds: from a cached read (well under a
// millisecond) to a long poll's wait (Dequeue waits up to 20 s).
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// instruments are one wrapped store's instruments, with the attribute
// options of every operation and error kind made in advance.
type instruments struct {
	storeType string
	duration  metric.Float64Histogram
	errs      metric.Int64Counter
	retries   metric.Int64Counter
	throttles metric.Int64Counter

	// byOp[o] records an observation of operation o; byErr[o][k] an error
	// of kind k in it. Slices, so a call passes them on as they are.
	byOp  [numOps][]metric.RecordOption
	byErr [numOps][numKinds][]metric.AddOption

	// retried and throttled are the backend's attribute options, by its
	// own operation (and reason): made at the first of each, since only
	// the backend knows its requests. They are few (an AWS store makes a
	// few dozen kinds of request).
	backendOpts sync.Map // backendKey -> []metric.AddOption
}

type backendKey struct {
	throttle          bool
	operation, reason string
}

func newInstruments(m metric.Meter, storeType string) *instruments {
	in := &instruments{
		storeType: storeType,
		duration: telemetry.Must(m.Float64Histogram("spool.store.duration", metric.WithUnit("s"),
			metric.WithDescription("How long each call to the store took, by operation; its count is the number of calls."),
			metric.WithExplicitBucketBoundaries(durationBuckets...))),
		errs: telemetry.Must(m.Int64Counter("spool.store.errors",
			metric.WithDescription("Calls to the store that returned an error, by operation and kind."))),
		retries: telemetry.Must(m.Int64Counter("spool.store.retries",
			metric.WithDescription("Requests the store's backend ran again inside one call, by the backend's request and why."))),
		throttles: telemetry.Must(m.Int64Counter("spool.store.throttles",
			metric.WithDescription("Requests the store's service refused for their rate, by the backend's request."))),
	}
	st := attribute.String("store", storeType)
	for o := range numOps {
		op := attribute.String("operation", opNames[o])
		in.byOp[o] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(op, st))}
		for k := range numKinds {
			in.byErr[o][k] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(op, st, attribute.String("kind", kindNames[k])))}
		}
	}
	return in
}

// done records a call of o that started at start and returned err.
func (in *instruments) done(ctx context.Context, o op, start time.Time, err error) {
	in.duration.Record(ctx, time.Since(start).Seconds(), in.byOp[o]...)
	if err != nil {
		in.errs.Add(ctx, 1, in.byErr[o][kindOf(err)]...)
	}
}

// Retried implements store.RetryObserver.
func (in *instruments) Retried(operation, reason string) {
	in.retries.Add(context.Background(), 1, in.backend(backendKey{operation: operation, reason: reason})...)
}

// Throttled implements store.RetryObserver.
func (in *instruments) Throttled(operation string) {
	in.throttles.Add(context.Background(), 1, in.backend(backendKey{throttle: true, operation: operation})...)
}

func (in *instruments) backend(k backendKey) []metric.AddOption {
	if o, ok := in.backendOpts.Load(k); ok {
		return o.([]metric.AddOption)
	}
	kvs := []attribute.KeyValue{attribute.String("store", in.storeType), attribute.String("operation", k.operation)}
	if !k.throttle {
		kvs = append(kvs, attribute.String("reason", k.reason))
	}
	o, _ := in.backendOpts.LoadOrStore(k, []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))})
	return o.([]metric.AddOption)
}

// kind is an error's kind, as the errors counter names it.
type kind int

const (
	kindInternal kind = iota
	kindInvalidArgument
	kindNotFound
	kindAlreadyExists
	kindStaleLease
	kindConflict
	kindThrottled
	kindUnauthenticated
	kindPermissionDenied
	kindUnavailable
	kindCanceled
	kindDeadlineExceeded
	numKinds
)

var kindNames = [numKinds]string{
	kindInternal:         "internal",
	kindInvalidArgument:  "invalid_argument",
	kindNotFound:         "not_found",
	kindAlreadyExists:    "already_exists",
	kindStaleLease:       "stale_lease",
	kindConflict:         "conflict",
	kindThrottled:        "throttled",
	kindUnauthenticated:  "unauthenticated",
	kindPermissionDenied: "permission_denied",
	kindUnavailable:      "unavailable",
	kindCanceled:         "canceled",
	kindDeadlineExceeded: "deadline_exceeded",
}

// spoolKinds pairs spool's error kinds with theirs here. A store's error
// wraps at most one; an error that wraps none is the store's own failure.
var spoolKinds = []struct {
	err  error
	kind kind
}{
	{spool.ErrInvalidArgument, kindInvalidArgument},
	{spool.ErrNotFound, kindNotFound},
	{spool.ErrAlreadyExists, kindAlreadyExists},
	{spool.ErrStaleLease, kindStaleLease},
	{spool.ErrConflict, kindConflict},
	{spool.ErrThrottled, kindThrottled},
	{spool.ErrUnauthenticated, kindUnauthenticated},
	{spool.ErrPermissionDenied, kindPermissionDenied},
	{spool.ErrUnavailable, kindUnavailable},
	{spool.ErrInternal, kindInternal},
}

// kindOf classifies a store's error. A call its caller gave up on (a long
// poll whose client went away) is canceled, not a failure of the store; a
// scatter moved on by another server is a conflict, as its caller treats
// it.
func kindOf(err error) kind {
	switch {
	case errors.Is(err, context.Canceled):
		return kindCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return kindDeadlineExceeded
	case errors.Is(err, store.ErrScatterMoved):
		return kindConflict
	}
	for _, k := range spoolKinds {
		if errors.Is(err, k.err) {
			return k.kind
		}
	}
	return kindInternal
}
