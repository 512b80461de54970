package config

import (
	"bytes"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzParse: any input is either refused with an error or gives a valid
// config that survives a round trip through YAML.
func FuzzParse(f *testing.F) {
	f.Add([]byte("server:\n  addr: 127.0.0.1:7070\n"))
	f.Add([]byte("execution:\n  batching:\n    max_batch_size: 100\n"))
	f.Add([]byte("store: {type: memory, sqlite: {path: /tmp/x.db}}\n"))
	f.Add([]byte("jobs:\n  max_attempts: !!int 3\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, nil)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshal a valid config: %v", err)
		}
		c2, err := Parse(out, nil)
		if err != nil {
			t.Fatalf("a valid config does not parse back: %v\n%s", err, out)
		}
		out2, err := yaml.Marshal(c2)
		if err != nil || !bytes.Equal(out, out2) {
			t.Fatalf("round trip changed the config:\n%s\n%s", out, out2)
		}
	})
}
