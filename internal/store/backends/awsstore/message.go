package awsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// message is the body of an SQS message: which job to look at, nothing
// more. DynamoDB holds the job; SQS only says when to look.
type message struct {
	JobID string `json:"job_id"`
	Queue string `json:"queue"`
	// Attempt is the job's attempt count when the message was sent (0 at
	// enqueue). The same message is redelivered for later attempts, so
	// this is for people reading the queue; DynamoDB's count decides.
	Attempt int32 `json:"attempt"`
	// Sent is when the message was sent, Unix milliseconds: how long a
	// receiver waits for a job that is not written yet depends on it.
	// Absent in messages of older servers, whose job ids tell instead.
	Sent int64 `json:"sent,omitempty"`
}

func decodeMessage(body string) (message, error) {
	var m message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return m, fmt.Errorf("not a spool message: %w", err)
	}
	if !validID(m.JobID) {
		return m, fmt.Errorf("not a spool message: no job_id")
	}
	return m, nil
}

// send puts a message for a job on its queue, in a batch with the sends
// to that queue under way beside it (see gatherer).
func (s *Store) send(ctx context.Context, queueURL string, m message) error {
	body, _ := json.Marshal(m) // strings and an int always marshal
	if err := s.sqs.sends.do(ctx, queueURL, string(body)); err != nil {
		return awsErr(err, "send job %s to SQS", m.JobID)
	}
	return nil
}

// sentAt is when the message was sent, as near as it can tell: its Sent,
// or else when its job id was made, which is when the job's enqueue began
// for the ids the store makes. (A job named by its caller, such as a
// scatter's batch job, can have an id much older than its enqueue; its
// messages always carry Sent.) ok is false when neither is known.
func (m message) sentAt() (t time.Time, ok bool) {
	if m.Sent > 0 {
		return time.UnixMilli(m.Sent), true
	}
	return idTime(m.JobID)
}

// idTime is when a job id was made: job ids are UUIDv7, which begin with
// their creation time. ok is false for anything else.
func idTime(id string) (t time.Time, ok bool) {
	u, err := uuid.Parse(id)
	if err != nil || u.Version() != 7 {
		return time.Time{}, false
	}
	sec, nsec := u.Time().UnixTime()
	return time.Unix(sec, nsec), true
}
