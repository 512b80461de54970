package httpapi_test

import (
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/spool-run/spool/internal/httpapi"
	"github.com/spool-run/spool/internal/ingest"
	"github.com/spool-run/spool/internal/jobjson"
)

type openAPIDoc struct {
	OpenAPI string                                   `yaml:"openapi"`
	Paths   map[string]map[string]any                `yaml:"paths"`
	Comps   struct{ Schemas map[string]schemaProps } `yaml:"components"`
}

type schemaProps struct {
	Properties map[string]any `yaml:"properties"`
	Required   []string       `yaml:"required"`
}

func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	b, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPIDoc
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	return doc
}

// The document lists exactly the routes the API serves, and the server
// serves the document as checked in.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Errorf("openapi: %q, want 3.1.x", doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	served := httpapi.RouteKeys()
	sort.Strings(documented)
	sort.Strings(served)
	if !slices.Equal(documented, served) {
		t.Errorf("documented routes:\n  %s\nserved routes:\n  %s", strings.Join(documented, "\n  "), strings.Join(served, "\n  "))
	}

	e := start(t)
	resp, err := http.Get(e.srv.URL + "/api/v1/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	want, _ := os.ReadFile("openapi.yaml")
	if resp.StatusCode != http.StatusOK || string(got) != string(want) {
		t.Errorf("GET /api/v1/openapi.yaml: %s, %d bytes; want the %d of openapi.yaml", resp.Status, len(got), len(want))
	}
	// Every route is mounted on the real server: none falls through to the
	// "no endpoint" answer.
	ids := strings.NewReplacer("{job_id}", "no-such-job", "{scatter_id}", "no-such-scatter")
	for _, r := range append(served, "GET /api/v1/not-a-route") {
		method, path, _ := strings.Cut(r, " ")
		req, _ := http.NewRequest(method, e.srv.URL+ids.Replace(path), nil)
		req.Header.Set("Authorization", "Bearer "+e.srv.AdminKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if unserved := strings.Contains(string(body), "no endpoint"); unserved != strings.HasSuffix(r, "not-a-route") {
			t.Errorf("%s: %s %s", r, resp.Status, body)
		}
	}
}

// The schemas name exactly the JSON fields the handlers write, and mark as
// required exactly those never omitted.
func TestOpenAPIMatchesTypes(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)
	for name, v := range map[string]any{
		"Job": jobjson.Job{}, "JobParams": jobjson.JobParams{}, "JobResult": jobjson.JobResult{}, "JobList": jobjson.List{},
		"LogLine": httpapi.Line{}, "Pagination": httpapi.Pagination{}, "LogPage": httpapi.LogPage{}, "LogSearch": httpapi.LogSearch{}, "EndMessage": httpapi.EndMessage{},
		"Session": httpapi.Session{}, "Ticket": httpapi.Ticket{},
		"ScatterMember": jobjson.ScatterMember{}, "Scatter": jobjson.Scatter{}, "ScatterProgress": jobjson.ScatterProgress{},
		"ScatterSpec": jobjson.ScatterSpec{}, "ScatterList": jobjson.ScatterList{}, "ScatterBatch": jobjson.ScatterBatch{},
		"ScatterBatches": jobjson.ScatterBatches{}, "CreateScatterRequest": httpapi.CreateScatterRequest{},
		"EnqueueJobsRequest": httpapi.EnqueueJobsRequest{}, "EnqueueJob": httpapi.EnqueueJob{},
		"EnqueueJobsResponse": httpapi.EnqueueJobsResponse{}, "EnqueueResult": httpapi.EnqueueResult{},
		"Queue": jobjson.Queue{}, "QueueList": jobjson.QueueList{}, "Delivery": jobjson.Delivery{},
		"CreateScheduleRequest": httpapi.CreateScheduleRequest{}, "Schedule": httpapi.Schedule{}, "ScheduleList": httpapi.ScheduleList{},
		"ConfigureQueueRequest": httpapi.ConfigureQueueRequest{},
		"IngestSummary":         httpapi.IngestSummary{}, "FirehoseResponse": ingest.FirehoseResponse{},
		"Artifact": jobjson.Artifact{}, "ArtifactList": jobjson.ArtifactList{},
	} {
		s, ok := doc.Comps.Schemas[name]
		if !ok {
			t.Errorf("schema %s is missing", name)
			continue
		}
		var documented []string
		for p := range s.Properties {
			documented = append(documented, p)
		}
		fields, always := jsonFields(reflect.TypeOf(v))
		sort.Strings(documented)
		sort.Strings(s.Required)
		if !slices.Equal(documented, fields) {
			t.Errorf("schema %s has properties %v; %T writes %v", name, documented, v, fields)
		}
		if name != "JobParams" && !slices.Equal(s.Required, always) { // JobParams: one of argv or script, said in prose
			t.Errorf("schema %s requires %v; %T always writes %v", name, s.Required, v, always)
		}
	}
}

// jsonFields lists a struct's JSON names, all and those never omitted.
// An embedded struct without a JSON name adds its own fields, as
// encoding/json does.
func jsonFields(t reflect.Type) (all, always []string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			a, b := jsonFields(f.Type)
			all, always = append(all, a...), append(always, b...)
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		all = append(all, name)
		if !strings.Contains(opts, "omit") {
			always = append(always, name)
		}
	}
	sort.Strings(all)
	sort.Strings(always)
	return all, always
}
