package webhook

import (
	"fmt"
	"net/url"
	"strings"
)

// MaxURL bounds a webhook URL's length.
const MaxURL = 2000

// CheckURL refuses what is not a URL to POST a job's end to: only http
// and https, with a host, without credentials in it (they would show on
// every job that names the URL) and without a fragment.
func CheckURL(raw string) error {
	if len(raw) > MaxURL {
		return fmt.Errorf("is %d bytes; at most %d", len(raw), MaxURL)
	}
	if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("%q contains spaces or control characters", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL", raw)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: only http:// and https:// URLs are notified", raw)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return fmt.Errorf("%q carries credentials, which every reader of the job would see; let the receiver check the Spool-Signature header instead", raw)
	case u.Fragment != "":
		return fmt.Errorf("%q has a fragment (#...), which is never sent", raw)
	}
	return nil
}
