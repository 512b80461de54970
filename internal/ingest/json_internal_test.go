package ingest

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// keysTwice is what uniqueKeys decides, found the plain way: encoding/json
// reads every key and value of the object.
func keysTwice(t *testing.T, data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("%q: %v", data, err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%q: %v", data, err)
		}
		key := strings.ToLower(tok.(string))
		if seen[key] {
			return true
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("%q: %v", data, err)
		}
	}
	return false
}

// FuzzUniqueKeys: on any JSON object, uniqueKeys, which steps over the
// values without decoding them, finds a key twice exactly when a decoder
// reading every key and value does.
func FuzzUniqueKeys(f *testing.F) {
	for _, s := range []string{
		`{}`, ` { "a" : 1 , "A" : 2 } `, `{"a":{"a":1,"b":[1,{"a":2}]},"b":"}\"{","c":true}`,
		`{"\u0061":1,"a":2}`, `{"a\\":"\\","b":[[],[[]],{}],"c":null,"d":-1.5e3}`, "{\"é\":1,\"É\":2}",
		`{"requestId":"r","timestamp":1,"records":[{"data":"x"},{"data":"y","DATA":"z"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]json.RawMessage
		if unmarshalObject(data, &m) != nil {
			return
		}
		err := uniqueKeys(data)
		if err != nil && err != errTwice {
			t.Fatalf("%q: %v", data, err)
		}
		if want := keysTwice(t, data); (err == errTwice) != want {
			t.Fatalf("%q: uniqueKeys says %v, a full decoding finds a key twice: %v", data, err, want)
		}
	})
}
