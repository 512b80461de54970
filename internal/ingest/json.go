package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// errNotObject is what unmarshalObject says of JSON that is not an object.
var errNotObject = errors.New("not a JSON object")

// unmarshalObject decodes data, which must be exactly one JSON object, into
// v. It returns errNotObject for any other JSON value (encoding/json would
// take null without a word) and encoding/json's error for what is not JSON.
func unmarshalObject(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return errNotObject
		}
		return err
	}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return errNotObject
	}
	return nil
}

// unmarshalStrictObject is unmarshalObject for objects decoded into
// structs, which also refuses a field named twice (errTwice).
func unmarshalStrictObject(data []byte, v any) error {
	if err := unmarshalObject(data, v); err != nil {
		return err
	}
	return uniqueKeys(data)
}

// errTwice is what unmarshalObject says of an object that names a field
// twice.
var errTwice = errors.New("a field appears twice")

// uniqueKeys refuses an object (already known to be valid JSON) in which
// two keys are the same but for case. encoding/json matches field names
// without regard to case and keeps the last of several, so such an object
// means two different things to two readers; a sender of logs has no
// reason to write one.
//
// It steps over the values without decoding or copying them: one of them
// may be most of a request.
func uniqueKeys(data []byte) error {
	seen := map[string]bool{}
	i := skipSpace(data, 0) + 1 // past the opening brace
	for {
		i = skipSpace(data, i)
		switch data[i] {
		case '}':
			return nil
		case ',':
			i = skipSpace(data, i+1)
		}
		end := valueEnd(data, i)
		key, err := keyText(data[i:end])
		if err != nil {
			return err
		}
		if key = strings.ToLower(key); seen[key] {
			return errTwice
		}
		seen[key] = true
		i = skipSpace(data, end) + 1 // past the colon
		i = valueEnd(data, skipSpace(data, i))
	}
}

// keyText is the text of raw, a JSON string that is an object's key.
func keyText(raw []byte) (string, error) {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), nil
	}
	var key string
	err := json.Unmarshal(raw, &key)
	return key, err
}

// skipSpace is the index of the first byte at or after i that is not JSON
// white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	return i
}

// valueEnd is the index just past the JSON value that starts at i, in
// data that is valid JSON.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		for j := i + 1; ; j++ {
			switch data[j] {
			case '\\':
				j++ // the escaped character, which may be a quote
			case '"':
				return j + 1
			}
		}
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch data[j] {
			case '"':
				j = valueEnd(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
	}
	// A number, true, false or null: it ends where the text around it
	// goes on.
	j := i
	for j < len(data) && strings.IndexByte(",:]} \t\r\n", data[j]) < 0 {
		j++
	}
	return j
}

// text decodes raw, a JSON value that encoding/json has checked, as a
// string. Missing and null are both "no name".
//
// encoding/json turns invalid UTF-8 and unpaired surrogate escapes
// ("\ud800") into U+FFFD without a word; text refuses both, so that what
// is accepted is what was sent.
func text(name string, raw []byte) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", malformed("no %s", name)
	}
	if raw[0] != '"' || len(raw) < 2 {
		return "", malformed("%s is not a string", name)
	}
	if !utf8.Valid(raw) {
		return "", malformed("%s is not valid UTF-8", name)
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		// Nothing to unescape, and JSON strings hold no raw control
		// characters: the bytes are the string.
		return string(inner), nil
	}
	if !surrogatesPaired(inner) {
		return "", malformed("%s is not valid Unicode (an unpaired surrogate escape)", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", malformedCause(err, "%s is not a string", name)
	}
	return s, nil
}

// surrogatesPaired says whether every \u escape of a UTF-16 surrogate in
// s, the inside of a JSON string, is a high one directly followed by a low
// one, which together stand for one character beyond U+FFFF.
func surrogatesPaired(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++ // the escaped character: skip it, so that "\\u" is no escape
		if i >= len(s) || s[i] != 'u' {
			continue
		}
		r, ok := hex4(s[i+1:])
		if !ok {
			return false
		}
		i += 4
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return false
		case r >= 0xd800 && r <= 0xdbff:
			if len(s) < i+7 || s[i+1] != '\\' || s[i+2] != 'u' {
				return false
			}
			low, ok := hex4(s[i+3:])
			if !ok || low < 0xdc00 || low > 0xdfff {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
