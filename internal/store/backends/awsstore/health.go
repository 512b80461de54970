package awsstore

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/spool-run/spool/internal/store"
	"github.com/spool-run/spool/internal/store/storekit"
)

// ReportRetries implements store.RetryReporter: requests the SDK ran again
// (throttled, or failed by the service or the network: its standard
// retryer), and every throttled attempt, by AWS call ("SQS.ReceiveMessage").
func (s *Store) ReportRetries(o store.RetryObserver) { s.clients.retries.ReportRetries(o) }

// countRetries adds to a client's stack a step around the SDK's retry loop
// that reads, once the loop is over, what each attempt met (the SDK keeps
// it in the response's metadata): one retry for each attempt that was
// retried, one throttle for each throttled attempt. It costs nothing per
// attempt, and a request that went through at once is looked at only to
// see that.
func countRetries(r *storekit.Retries) func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("spool-retries",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				results, ok := retry.GetAttemptResults(md)
				if !ok || len(results.Results) < 2 && (err == nil || !throttle(err)) {
					return out, md, err
				}
				op := awsmiddleware.GetServiceID(ctx) + "." + awsmiddleware.GetOperationName(ctx)
				for _, a := range results.Results {
					throttled := a.Err != nil && throttle(a.Err)
					if throttled {
						r.Throttled(op)
					}
					if a.Retried {
						why := "transient"
						if throttled {
							why = "throttled"
						}
						r.Retried(op, why)
					}
				}
				return out, md, err
			}), "Retry", middleware.Before)
	}
}

// throttle reports whether err is AWS asking for fewer requests, as the
// SDK's retryer decides it.
func throttle(err error) bool {
	for _, t := range retry.DefaultThrottles {
		if t.IsErrorThrottle(err) == aws.TrueTernary {
			return true
		}
	}
	return false
}

// Ping implements store.Pinger: DynamoDB is asked for the jobs table, as
// Open asks for it. (SQS is asked at every lease: a server whose queues
// fail shows it in its calls' errors.)
func (s *Store) Ping(ctx context.Context) error {
	if _, err := s.clients.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.cfg.JobsTable)}); err != nil {
		return awsErr(err, "describe DynamoDB table %s", s.cfg.JobsTable)
	}
	return nil
}
