package connectapi

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
)

// PLACEHOLDER: must be gone before anything lands.
func (h queueHandler) ConfigureQueue(context.Context, *connect.Request[spoolv1.ConfigureQueueRequest]) (*connect.Response[spoolv1.ConfigureQueueResponse], error) {
	return nil, connect.NewError(connect.CodeUnimplemented, errors.New("not built yet"))
}
