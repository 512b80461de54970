package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/spool-run/spool/client"
	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/internal/store"
)

// jsonOut is how commands print messages with --json: the API's field
// names (snake_case), indented.
var jsonOut = protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true}

func printJSON(w io.Writer, m proto.Message) error {
	b, err := jsonOut.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func stateName(s spoolv1.JobState) string { return store.StateName(s) }

// ago says how long before now t was, the way people say it.
func ago(t time.Time, now time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return fmt.Sprintf("%dd ago", int(d.Hours()/24))
}

// commandLine is a job's command for people: argv joined, or the script.
func commandLine(p *spoolv1.JobParams) string {
	if p.GetScript() != "" {
		return p.GetScript()
	}
	return strings.Join(p.GetArgv(), " ")
}

// truncate shortens s to n runes, marking the cut.
func truncate(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// explain turns an error into a sentence for the person at the terminal.
func explain(err error, server string) string {
	if client.IsUnavailable(err) {
		return fmt.Sprintf("cannot reach the spool server at %s (%v).\nStart one with `spool server`, or point --server or SPOOL_SERVER at yours.", server, errors.Unwrap(err))
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		switch ce.Code() {
		case connect.CodeNotFound, connect.CodeInvalidArgument, connect.CodeFailedPrecondition:
			return ce.Message()
		}
		return fmt.Sprintf("%s (%s)", ce.Message(), ce.Code())
	}
	return err.Error()
}
