package worker

import (
	"maps"
	"slices"

	"github.com/spool-run/spool/internal/mask"
)

// A job's secrets come in its lease alone. The command gets them as
// environment variables; its output is masked before anything else sees
// it (the outbox, the batcher, the server), so no secret's value, or its
// base64, is written to disk or sent.

// secretEnv are a job's secrets as environment variables, by name.
func secretEnv(secrets map[string]string) []string {
	env := make([]string, 0, len(secrets))
	for _, name := range slices.Sorted(maps.Keys(secrets)) {
		env = append(env, name+"="+secrets[name])
	}
	return env
}

// masker is what hides the job's secrets, and its job token, in its
// output (nil: it has neither).
func (a *attempt) masker() *mask.Masker {
	a.maskOnce.Do(func() {
		values := slices.Collect(maps.Values(a.lease.GetSecrets()))
		// The job token lets whoever holds it keep files as the job:
		// a command that prints its environment must not show it.
		if tok := a.lease.GetJobToken(); tok != "" {
			values = append(values, tok)
		}
		a.hide = mask.New(values)
	})
	return a.hide
}
