package awsstore

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/spool-run/spool"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/store"
)

// Priorities. SQS standard queues hand out messages in no set order, so
// each priority of a spool queue has an SQS queue of its own: the default
// priority is the queue that always existed (nothing changes for a
// deployment that uses none), the others are that queue's name (or, for a
// queue configured by URL, its URL) plus prioritySuffix. They share the
// default queue's dead-letter queue, so the reaper's look into it covers
// them. A priority queue is made by Provision, or by the first enqueue of
// its priority (with AutoCreateQueues). A Store's first enqueue of a
// priority records it in the queue's settings item (see limits.go), and
// Dequeue, which reads that item anyway (at most once a second per
// queue), polls only the priorities it names.

// priorityRecheck is how long Dequeue takes a priority queue it did not
// find as missing (its jobs used it, by the queue's settings item, but it
// was deleted since).
const priorityRecheck = time.Minute

// prioritySuffix names the SQS queue of priority p (not the default).
func prioritySuffix(p int32) string { return fmt.Sprintf("-p%d", p) }

// priorityOf is a job's priority as stored (0: the default).
func priorityOf(p int32) int32 { return cmp.Or(p, store.DefaultPriority) }

// priorityDir remembers the SQS queues of the priorities other than the
// default: found URLs for good, missing ones for priorityRecheck.
type priorityDir struct {
	mu      sync.Mutex
	urls    map[string]string    // queue + suffix -> URL
	missing map[string]time.Time // queue + suffix -> when found missing
	// recorded: queue + suffix -> this Store recorded the priority in use
	// (it never leaves the settings item, so once is enough).
	recorded map[string]bool
}

// record reports whether key still has to be recorded in use, and
// notes that it was once done is true.
func (d *priorityDir) record(key string, done bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if done {
		if d.recorded == nil {
			d.recorded = map[string]bool{}
		}
		d.recorded[key] = true
	}
	return !d.recorded[key]
}

// jobURL is the SQS queue of a job's queue and priority. An enqueue makes
// a missing priority queue (with AutoCreateQueues), or says how to.
func (s *Store) jobURL(ctx context.Context, queue string, priority int32) (string, error) {
	p := priorityOf(priority)
	url, ok, err := s.priorityURL(ctx, queue, p, true)
	if err == nil && ok && p != store.DefaultPriority {
		err = s.usePriority(ctx, queue, p)
	}
	if err == nil && !ok {
		err = apierr.Errorf(spool.ErrInvalidArgument, "queue %q has no SQS queue for priority %d: create SQS queue %s (with the queue's redrive policy), or turn on store.aws.auto_create_queues",
			queue, priority, s.priorityName(ctx, queue, priority))
	}
	return url, err
}

// priorityURL finds the SQS queue of priority p of queue; ok is false when
// it does not exist (and create is off or AutoCreateQueues is).
func (s *Store) priorityURL(ctx context.Context, queue string, p int32, create bool) (url string, ok bool, err error) {
	base, err := s.queues.url(ctx, queue)
	if err != nil || p == store.DefaultPriority {
		return base, err == nil, err
	}
	key := queue + prioritySuffix(p)
	d := &s.prio
	d.mu.Lock()
	url, found := d.urls[key]
	gone, wasMissing := d.missing[key]
	d.mu.Unlock()
	if found {
		return url, true, nil
	}
	if wasMissing && !create && time.Since(gone) < priorityRecheck {
		return "", false, nil
	}
	name := path.Base(strings.TrimRight(base, "/")) + prioritySuffix(p)
	out, err := s.clients.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	switch {
	case err == nil:
		url = aws.ToString(out.QueueUrl)
	case !queueMissing(err):
		return "", false, awsErr(err, "look up SQS queue %s of queue %q", name, queue)
	case !create || !s.cfg.AutoCreateQueues:
		d.mu.Lock()
		if d.missing == nil {
			d.missing = map[string]time.Time{}
		}
		d.missing[key] = time.Now()
		d.mu.Unlock()
		return "", false, nil
	default:
		made, err := s.createQueue(ctx, name, path.Base(strings.TrimRight(base, "/"))+DeadLetterSuffix)
		if err != nil {
			return "", false, err
		}
		url = made.URL
		s.log.Info("created SQS queue", "queue", queue, "priority", p, "url", url)
	}
	d.mu.Lock()
	if d.urls == nil {
		d.urls = map[string]string{}
	}
	d.urls[key] = url
	delete(d.missing, key)
	d.mu.Unlock()
	return url, true, nil
}

// priorityName is the SQS name of priority p of queue, for messages.
func (s *Store) priorityName(ctx context.Context, queue string, p int32) string {
	base, err := s.queues.url(ctx, queue)
	if err != nil {
		return queue + prioritySuffix(p)
	}
	return path.Base(strings.TrimRight(base, "/")) + prioritySuffix(p)
}

// pollURLs are the SQS queues Dequeue polls for a spool queue whose jobs
// used priorities prios besides the default, highest priority first, and
// which of them is the default's.
func (s *Store) pollURLs(ctx context.Context, queue string, prios []int32) ([]string, int, error) {
	var out []string
	def := 0
	for p := int32(store.HighestPriority); p <= store.LowestPriority; p++ {
		if p != store.DefaultPriority && !slices.Contains(prios, p) {
			continue
		}
		url, ok, err := s.priorityURL(ctx, queue, p, false)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			if p == store.DefaultPriority {
				def = len(out)
			}
			out = append(out, url)
		}
	}
	return out, def, nil
}

// otherPriorities are the priorities with SQS queues of their own.
func otherPriorities() []int32 {
	var out []int32
	for p := int32(store.HighestPriority); p <= store.LowestPriority; p++ {
		if p != store.DefaultPriority {
			out = append(out, p)
		}
	}
	return out
}
