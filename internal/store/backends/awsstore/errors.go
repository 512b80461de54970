package awsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
)

// awsErr explains a failed AWS call: what spool was doing, then the SDK's
// error. Throttling that outlasted the retries becomes spool.ErrThrottled,
// so the caller is told to come back later rather than that something
// broke.
func awsErr(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if _, ok := retry.DefaultThrottleErrorCodes[ae.ErrorCode()]; ok {
			return apierr.Errorf(spool.ErrThrottled, "%s: AWS is throttling requests (%s); retry later: %w", what, ae.ErrorCode(), err)
		}
		var missing *types.ResourceNotFoundException
		if errors.As(err, &missing) {
			return fmt.Errorf("%s: %w (create the tables with `spool aws init` or deploy/aws/spool.yaml)", what, err)
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// conditionFailed reports whether a write was refused by its condition:
// someone else changed the item first.
func conditionFailed(err error) bool {
	var e *types.ConditionalCheckFailedException
	return errors.As(err, &e)
}

// errorCode is the AWS error code of err ("" if it has none).
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
