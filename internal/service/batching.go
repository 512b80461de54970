package service

import (
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/config"
	"github.com/spool-run/spool/internal/convert"
)

// checkParams checks what a job runs (checkParams) and the batching it
// asks for, against this server's bounds.
func (s *Service) checkParams(p *spoolv1.JobParams, rejected bool) error {
	if err := checkParams(p, rejected); err != nil {
		return err
	}
	return checkBatching(p.GetBatching(), s.cfg.Execution.Batching)
}

// checkBatching checks a job's own batching against the bounds the server
// sets for jobs. Each error names the bound, its value and where it is
// set, so the person asking knows what they may ask for and the operator
// what to change.
func checkBatching(b *spoolv1.JobBatching, lim config.Batching) error {
	if b == nil {
		return nil
	}
	if f := b.GetFlushInterval(); f != nil {
		d := f.AsDuration()
		switch {
		case f.CheckValid() != nil || d <= 0:
			return invalid("params.batching.flush_interval must be a positive duration (leave it out for the server's %ds)", lim.FlushIntervalSeconds)
		case d < lim.JobMinFlushInterval():
			return invalid("params.batching.flush_interval %v is below this server's minimum for a job, %v (execution.batching.job_min_flush_interval_millis)",
				d, lim.JobMinFlushInterval())
		case d > lim.JobMaxFlushInterval():
			return invalid("params.batching.flush_interval %v is above this server's maximum for a job, %v (execution.batching.job_max_flush_interval_seconds)",
				d, lim.JobMaxFlushInterval())
		}
	}
	switch n := b.GetMaxBatchSize(); {
	case n < 0:
		return invalid("params.batching.max_batch_size %d is negative; give a number of lines from 1 (or 0 for the server's %d)", n, lim.MaxBatchSize)
	case int(n) > lim.JobMaxBatchSize:
		return invalid("params.batching.max_batch_size %d is above this server's maximum for a job, %d lines a batch (execution.batching.job_max_batch_size)",
			n, lim.JobMaxBatchSize)
	}
	return nil
}

// execution is the ExecutionConfig stored with a job of params p: the
// server's, with what p's batching asks for (checked by checkBatching) in
// its place. Every reader of the job's log then uses the batch size it
// was written with, whatever the server's is.
func (s *Service) execution(p *spoolv1.JobParams) *spoolv1.ExecutionConfig {
	ex := s.cfg.ExecutionConfig()
	b := p.GetBatching()
	if b == nil {
		return ex
	}
	if f := b.GetFlushInterval(); f != nil {
		convert.SetFlushInterval(ex.Batching, f.AsDuration())
	}
	if n := b.GetMaxBatchSize(); n > 0 {
		ex.Batching.MaxBatchSize = n
	}
	return ex
}
