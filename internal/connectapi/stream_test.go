package connectapi_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	spoolv1 "github.com/spool-run/spool/gen/spool/v1"
	"github.com/spool-run/spool/gen/spool/v1/spoolv1connect"
	"github.com/spool-run/spool/internal/events"
	"github.com/spool-run/spool/spooltest"
)

// bearer sends every request with an API key.
type bearer struct {
	rt  http.RoundTripper
	key string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.rt.RoundTrip(r)
}

// TestStreamEventsEveryProtocol: over gRPC, gRPC-Web, Connect and Connect
// JSON, a log streams as the same messages, whole batches (sent on as
// stored) and cut ones alike, with every line from where the request
// starts.
func TestStreamEventsEveryProtocol(t *testing.T) {
	srv := spooltest.NewServer(t)
	job := spooltest.RunJob(t, srv, spooltest.Seq(1, 300)...)
	id := job.ID
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	protocols := []struct {
		name string
		rt   http.RoundTripper
		opts []connect.ClientOption
	}{
		{"connect", http.DefaultTransport, nil},
		{"connect JSON", http.DefaultTransport, []connect.ClientOption{connect.WithProtoJSON()}},
		{"grpc", &http.Transport{Protocols: h2c}, []connect.ClientOption{connect.WithGRPC()}},
		{"grpc-web", http.DefaultTransport, []connect.ClientOption{connect.WithGRPCWeb()}},
	}
	output := []spoolv1.EventType{spoolv1.EventType_EVENT_TYPE_OUTPUT_BATCH}
	// Line i prints i; PROCESS_START is sequence 1, so line i is sequence
	// i+1.
	for _, r := range []struct {
		name      string
		req       *spoolv1.StreamEventsRequest
		firstLine int64
	}{
		{"whole log", &spoolv1.StreamEventsRequest{JobId: id}, 1},
		{"from inside a batch", &spoolv1.StreamEventsRequest{JobId: id, FromSequence: 30}, 29},
		{"from a line", &spoolv1.StreamEventsRequest{JobId: id, FromLine: 75}, 75},
		{"output only", &spoolv1.StreamEventsRequest{JobId: id, EventTypes: output}, 1},
		{"unpacked", &spoolv1.StreamEventsRequest{JobId: id, FromSequence: 290, Unpack: true}, 289},
	} {
		var first []*spoolv1.StreamEventsResponse
		for _, p := range protocols {
			api := spoolv1connect.NewJobServiceClient(&http.Client{Transport: bearer{p.rt, srv.AdminKey}}, srv.URL, p.opts...)
			stream, err := api.StreamEvents(context.Background(), connect.NewRequest(r.req))
			if err != nil {
				t.Fatalf("%s, %s: %v", r.name, p.name, err)
			}
			var got []*spoolv1.StreamEventsResponse
			for stream.Receive() {
				got = append(got, stream.Msg())
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("%s, %s: %v", r.name, p.name, err)
			}
			if first == nil {
				first = got
				wantLines(t, r.name, got, r.firstLine)
				continue
			}
			if len(got) != len(first) {
				t.Fatalf("%s, %s: %d messages, %s had %d", r.name, p.name, len(got), protocols[0].name, len(first))
			}
			for i := range got {
				if !proto.Equal(got[i], first[i]) {
					t.Fatalf("%s, %s: message %d is %v, %s sent %v", r.name, p.name, i, got[i], protocols[0].name, first[i])
				}
			}
		}
	}
}

// wantLines checks that a stream holds lines from to 300, each printing its
// number, and ends with the finished job.
func wantLines(t *testing.T, name string, got []*spoolv1.StreamEventsResponse, from int64) {
	t.Helper()
	if len(got) == 0 || got[len(got)-1].GetFinishedJob() == nil {
		t.Fatalf("%s: the stream does not end with the finished job", name)
	}
	next := from
	for _, m := range got[:len(got)-1] {
		for _, ev := range events.Unpack(m.GetEvent()) {
			line := ev.GetOutputData()
			if line == nil {
				continue
			}
			if line.GetLineNumber() != next || string(line.GetOutput()) != strconv.FormatInt(next, 10) {
				t.Fatalf("%s: line %d %q, want line %d", name, line.GetLineNumber(), line.GetOutput(), next)
			}
			next++
		}
	}
	if next != 301 {
		t.Fatalf("%s: lines end before %d, want 301", name, next)
	}
}
