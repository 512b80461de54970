package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spool-run/spool/internal/suggest"
)

// EnvPrefix starts every environment override: a setting's YAML path,
// upper-cased and joined with '_' (execution.batching.max_batch_size is
// SPOOL_EXECUTION_BATCHING_MAX_BATCH_SIZE).
const EnvPrefix = "SPOOL_"

// EnvName is the environment variable that overrides the setting at path.
func EnvName(path ...string) string {
	return EnvPrefix + strings.ToUpper(strings.Join(path, "_"))
}

// applyEnv sets every field whose variable is present, also under its
// old name.
func applyEnv(cfg *Config, lookup func(string) (string, bool)) error {
	if err := renamedInEnv(cfg, lookup); err != nil {
		return err
	}
	return walk(reflect.ValueOf(cfg).Elem(), nil, func(v reflect.Value, path []string) error {
		name := EnvName(path...)
		s, ok := lookup(name)
		if !ok {
			return nil
		}
		if err := setScalar(v, s); err != nil {
			return fmt.Errorf("%s=%q: %w", name, s, err)
		}
		return nil
	})
}

// walk calls fn for every scalar field under v, with its YAML path.
func walk(v reflect.Value, path []string, fn func(reflect.Value, []string) error) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "-" {
			continue
		}
		p := append(append([]string(nil), path...), tag)
		fv := v.Field(i)
		switch fv.Kind() {
		case reflect.Struct:
			if err := walk(fv, p, fn); err != nil {
				return err
			}
		case reflect.String, reflect.Int, reflect.Int32, reflect.Int64, reflect.Bool:
			if err := fn(fv, p); err != nil {
				return err
			}
		case reflect.Slice:
			if fv.Type().Elem().Kind() == reflect.String {
				if err := fn(fv, p); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

var durationType = reflect.TypeFor[time.Duration]()

func setScalar(v reflect.Value, s string) error {
	if v.Type() == durationType {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("not a duration (like 250ms or 2s)")
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Int, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, v.Type().Bits())
		if err != nil {
			return fmt.Errorf("not a whole number")
		}
		v.SetInt(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("not true or false")
		}
		v.SetBool(b)
	case reflect.Slice:
		// A list is given comma-separated: SPOOL_SERVER_PUBLIC_HOSTS=a,b.
		var items []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		v.Set(reflect.ValueOf(items))
	}
	return nil
}

// EnvNames lists the environment variable of every setting, in file order.
func EnvNames() []string {
	var names []string
	_ = walk(reflect.ValueOf(Default()).Elem(), nil, func(_ reflect.Value, path []string) error {
		names = append(names, EnvName(path...))
		return nil
	})
	return names
}

// otherVars are SPOOL_ variables that are not server settings: the
// clients' server address, what the worker tells each job, and the knobs
// of spool's own test suite.
var otherVars = []string{"SPOOL_SERVER", "SPOOL_API_KEY", "SPOOL_CA", "SPOOL_JOB_ID", "SPOOL_JOB_ATTEMPT", "SPOOL_QUEUE", "SPOOL_CHROMIUM", "SPOOL_ARTIFACTS_DIR"}

// UnknownEnv returns a warning for every SPOOL_ variable in environ (as
// os.Environ gives it) that names no setting: a misspelt override is
// otherwise ignored without a word. Each names the closest setting's
// variable when one is close enough to be the one meant.
func UnknownEnv(environ []string) []string {
	known := EnvNames()
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) || slices.Contains(known, name) || slices.Contains(otherVars, name) || isOldEnvName(name) {
			continue
		}
		w := fmt.Sprintf("%s is not a spool setting and is ignored", name)
		if near := closest(name, known); near != "" {
			w += "; did you mean " + near + "?"
		} else {
			w += " (spool server --help lists the variables)"
		}
		warnings = append(warnings, w)
	}
	return warnings
}

// closest is the name among names nearest to s, if it is a few edits away
// (a typo, a missing word separator), or "".
func closest(s string, names []string) string {
	best, bestDist := "", max(3, len(s)/6)+1
	for _, n := range names {
		if d := suggest.Distance(s, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}
