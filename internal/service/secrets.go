package service

import (
	"context"
	"errors"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/apierr"
	"github.com/spool-run/spool/internal/seal"
	"github.com/spool-run/spool/internal/store"
)

// A job's secrets go in at enqueue and out only in a lease. In between
// they are sealed (package seal: AES-GCM under a key derived from the
// token key, the job's id as additional data) and kept by the store
// beside the job, never in it; the job shows their names
// (params.secret_names). A rerun opens the old job's and seals them anew
// for the new job.

// withSecrets makes nj a job with the given secrets (none: nj as it is): it
// names the job, since the sealed secrets are bound to its id, seals them,
// and sets their names in a copy of its params. A client may send the
// names itself; they must then be those of the secrets.
func (s *Service) withSecrets(nj *store.NewJob, secrets map[string]string) error {
	names := slices.Sorted(maps.Keys(secrets))
	if got := nj.Params.GetSecretNames(); len(got) > 0 && !slices.Equal(slices.Sorted(slices.Values(got)), names) {
		return invalid("params.secret_names is set by spool from secrets; leave it empty")
	}
	if len(secrets) == 0 {
		return nil
	}
	if s.sealer == nil {
		return errNoSealer
	}
	if nj.ID == "" {
		nj.ID = newJobID()
	}
	sealed, err := s.sealer.Seal(nj.ID, secrets)
	if err != nil {
		return err
	}
	nj.Secrets = sealed
	nj.Params = proto.CloneOf(nj.Params)
	nj.Params.SecretNames = names
	return nil
}

// errNoSealer: only a core built without Options.Sealer says it.
var errNoSealer = apierr.Errorf(spool.ErrUnavailable, "this server has no key to seal secrets with; it cannot run jobs with secrets")

// secretsOf opens the secrets of a job that has some (nil for one that
// has none).
func (s *Service) secretsOf(ctx context.Context, j *spoolv1.Job) (map[string]string, error) {
	if len(j.GetParams().GetSecretNames()) == 0 {
		return nil, nil
	}
	if s.sealer == nil {
		return nil, errNoSealer
	}
	sealed, err := s.store.JobSecrets(ctx, j.GetJobId())
	if err != nil {
		return nil, err
	}
	return s.sealer.Open(j.GetJobId(), sealed)
}

// leaseSecrets opens the secrets of the leased jobs that have some, and
// returns the leases that can run, each with its job's secrets (nil:
// none). A job whose secrets cannot be read now (the store failed) goes
// back to its queue at once; one whose secrets this server cannot open
// (its token key is not the one they were sealed with) goes back counting
// an attempt, so that it fails in the end, saying why, rather than run
// without them.
func (s *Service) leaseSecrets(ctx context.Context, leases []store.Lease) ([]store.Lease, []map[string]string) {
	kept := leases[:0:0]
	var secrets []map[string]string
	for _, l := range leases {
		sec, err := s.secretsOf(ctx, l.Job)
		if err == nil {
			kept, secrets = append(kept, l), append(secrets, sec)
			continue
		}
		openFailed := errors.Is(err, seal.ErrOpen)
		s.log.ErrorContext(ctx, "handing back a leased job whose secrets cannot be read", "job_id", l.JobID, "error", err)
		reason := "its secrets could not be read; it is tried again"
		if openFailed {
			reason = err.Error()
		}
		if _, rerr := s.store.Release(context.WithoutCancel(ctx), l.LeaseRef, openFailed, reason); rerr != nil {
			s.log.WarnContext(ctx, "could not hand back a job whose secrets cannot be read; it goes back to its queue when its lease ends", "job_id", l.JobID, "error", rerr)
		}
	}
	return kept, secrets
}
