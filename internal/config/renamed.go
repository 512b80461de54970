package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A setting that was renamed is still read under its old name, from the
// file and from the environment, so a configuration that worked keeps
// working; the server says at start which name to use instead. Given in
// the same place (the file, or the environment) as the new name, it is an
// error: either value could be the one meant. Across places the usual
// precedence holds: the environment overrides the file, whatever name
// either uses.

// rename is a setting's old and new YAML paths. The old one is a pointer
// field beside the new one (nil: not given), which neither the
// environment's walk nor the example file's check count as a setting.
type rename struct{ old, new []string }

var renames = []rename{
	// SQS's word for it. spool calls it the lease everywhere else: in
	// the worker's flags, in its Go configuration, in the docs.
	{old: []string{"jobs", "visibility_timeout_seconds"}, new: []string{"jobs", "lease_seconds"}},
}

// renamedInFile moves the values the file gave under an old name to the
// new one.
func renamedInFile(cfg *Config, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	for _, r := range renames {
		old := fieldAt(reflect.ValueOf(cfg).Elem(), r.old)
		if old.IsNil() {
			continue
		}
		oldName, newName := strings.Join(r.old, "."), strings.Join(r.new, ".")
		if len(doc.Content) == 1 && hasKey(doc.Content[0], r.new) {
			return fmt.Errorf("%s and %s are both set: %s is the old name of %s; keep %s only", oldName, newName, oldName, newName, newName)
		}
		fieldAt(reflect.ValueOf(cfg).Elem(), r.new).Set(old.Elem())
		old.SetZero()
		cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s is deprecated: call it %s", oldName, newName))
	}
	return nil
}

// renamedInEnv applies the variables named after an old name to the new
// setting.
func renamedInEnv(cfg *Config, lookup func(string) (string, bool)) error {
	for _, r := range renames {
		oldName, newName := EnvName(r.old...), EnvName(r.new...)
		s, ok := lookup(oldName)
		if !ok {
			continue
		}
		if _, both := lookup(newName); both {
			return fmt.Errorf("%s and %s are both set: %s is the old name of %s; keep %s only", oldName, newName, oldName, newName, newName)
		}
		if err := setScalar(fieldAt(reflect.ValueOf(cfg).Elem(), r.new), s); err != nil {
			return fmt.Errorf("%s=%q: %w", oldName, s, err)
		}
		cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s is deprecated: call it %s", oldName, newName))
	}
	return nil
}

// isOldEnvName reports whether name is a variable of a setting's old name.
func isOldEnvName(name string) bool {
	return slices.ContainsFunc(renames, func(r rename) bool { return EnvName(r.old...) == name })
}

// fieldAt is the field of the struct v at the YAML path.
func fieldAt(v reflect.Value, path []string) reflect.Value {
	for _, name := range path {
		f, ok := fieldByTag(v.Type(), name)
		if !ok {
			panic("config: no setting " + strings.Join(path, "."))
		}
		v = v.FieldByIndex(f.Index)
	}
	return v
}

// hasKey reports whether the mapping n holds the key path.
func hasKey(n *yaml.Node, path []string) bool {
	for _, name := range path {
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if n.Kind != yaml.MappingNode {
			return false
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return false
		}
		n = next
	}
	return true
}
