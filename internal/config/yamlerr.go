package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlError rewords the YAML decoder's errors, which name Go types and
// lines but not settings, in the file's terms: each problem names the
// setting by its path (jobs.max_attempts), says what it wants, and gives
// the line.
func yamlError(data []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 {
		if problems := settingProblems(doc.Content[0], reflect.TypeFor[Config](), nil); len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
	}
	// The walk below finds every problem the decoder does; should the two
	// ever disagree, the decoder's own words are better than nothing.
	return errors.New(strings.Join(te.Errors, "; "))
}

// settingProblems decodes the node n holding the setting at path (of Go
// type t) piece by piece, so that each problem is known by its setting.
func settingProblems(n *yaml.Node, t reflect.Type, path []string) []string {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	name := strings.Join(path, ".")
	if t.Kind() != reflect.Struct {
		if n.Decode(reflect.New(t).Interface()) != nil {
			return []string{fmt.Sprintf("%s: want %s, got %s (line %d)", name, wanted(t), shown(n), n.Line)}
		}
		return nil
	}
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil // an empty section keeps its defaults
	case n.Kind != yaml.MappingNode && len(path) == 0:
		return []string{fmt.Sprintf("the file must be a mapping of settings (server:, store:, …), got %s (line %d)", shown(n), n.Line)}
	case n.Kind != yaml.MappingNode:
		return []string{fmt.Sprintf("%s: want a section of settings (%s.<setting>: value), got %s (line %d)", name, name, shown(n), n.Line)}
	}
	var problems []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		p := append(append([]string(nil), path...), key.Value)
		f, ok := fieldByTag(t, key.Value)
		if !ok {
			problems = append(problems, fmt.Sprintf("unknown setting %s (line %d): check its spelling and where it is nested", strings.Join(p, "."), key.Line))
			continue
		}
		problems = append(problems, settingProblems(value, f.Type, p)...)
	}
	return problems
}

// fieldByTag is t's field whose YAML name is name.
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if strings.Split(f.Tag.Get("yaml"), ",")[0] == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// wanted says what a value of type t looks like in the file.
func wanted(t reflect.Type) string {
	if t == durationType {
		return "a duration such as 250ms or 2s"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "text"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(wanted(t.Elem()), "a ")
	case reflect.Map:
		return "a mapping of names to " + wanted(t.Elem())
	case reflect.Pointer:
		return wanted(t.Elem())
	}
	return t.String()
}

// shown quotes a node's value for a message, briefly.
func shown(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if r := []rune(v); len(r) > 40 {
		v = string(r[:39]) + "…"
	}
	return fmt.Sprintf("%q", v)
}
