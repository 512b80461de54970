package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// EnvPrefix starts every environment override: a setting's YAML path,
// upper-cased and joined with '_' (execution.batching.max_batch_size is
// SPOOL_EXECUTION_BATCHING_MAX_BATCH_SIZE).
const EnvPrefix = "SPOOL_"

// EnvName is the environment variable that overrides the setting at path.
func EnvName(path ...string) string {
	return EnvPrefix + strings.ToUpper(strings.Join(path, "_"))
}

// applyEnv sets every field whose variable is present.
func applyEnv(cfg *Config, lookup func(string) (string, bool)) error {
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
