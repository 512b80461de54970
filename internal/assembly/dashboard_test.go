package assembly_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboard is the Grafana dashboard operators import.
const dashboard = "../../deploy/grafana/spool.json"

// grafanaDashboard is what the test reads of a dashboard's JSON.
type grafanaDashboard struct {
	Title         string `json:"title"`
	UID           string `json:"uid"`
	SchemaVersion int    `json:"schemaVersion"`
	Templating    struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// TestDashboard: deploy/grafana/spool.json is a Grafana dashboard whose
// every query names only metrics spool exports, with labels they carry.
// The names are held to docs/metrics.md, which TestMetricsDocServer holds
// to what a server and a worker that ran jobs export, in both directions.
func TestDashboard(t *testing.T) {
	doc := readMetricsDoc(t)
	raw, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s is not JSON: %v", dashboard, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 30 || len(d.Panels) == 0 {
		t.Fatalf("%s lacks a title, a uid, a schemaVersion of a current Grafana, or panels", dashboard)
	}
	var exprs []string
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] || p.GridPos == nil || p.GridPos.W == 0 {
			t.Errorf("panel %q: its id %d is taken, or it has no place (gridPos)", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: no query, or not on the dashboard's Prometheus (${datasource})", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}

	seen := map[string]bool{}
	for _, expr := range exprs {
		metrics, labels := promQLNames(expr)
		// A variable's query is Grafana's label_values(metric, label).
		if m := labelValuesRE.FindStringSubmatch(expr); m != nil {
			metrics, labels = promQLNames(m[1])
			labels = append(labels, m[2])
		}
		if len(metrics) == 0 {
			t.Errorf("query %q names no metric", expr)
		}
		// Labels a query uses: those of its metrics, the histogram's
		// bucket bound, and the target's, which Prometheus adds.
		known := map[string]bool{"le": true, "instance": true, "job": true}
		for _, m := range metrics {
			row, name := docRowOf(doc, m)
			if name == "" {
				t.Errorf("query %q names %s, which docs/metrics.md does not list: spool does not export it", expr, m)
				continue
			}
			seen[name] = true
			for _, l := range row.labels {
				known[l] = true
			}
		}
		for _, l := range labels {
			if !known[l] {
				t.Errorf("query %q uses label %s, which none of its metrics carries (docs/metrics.md)", expr, l)
			}
		}
	}
	// The panels the dashboard promises.
	for _, want := range []string{"spool_queue_jobs", "spool_jobs_leased_total", "spool_jobs_finished_total", "spool_events_published_lines_total",
		"spool_leases_settled_total", "spool_store_duration_seconds", "spool_store_errors_total"} {
		if !seen[want] {
			t.Errorf("%s has no panel of %s", dashboard, want)
		}
	}
}

// docRowOf finds the documented metric a series name belongs to: itself,
// or a histogram's _bucket, _sum or _count.
func docRowOf(doc metricsDocRows, series string) (docMetric, string) {
	if row, ok := doc[series]; ok {
		return row, series
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok {
			if row, ok := doc[base]; ok && row.typ == "histogram" {
				return row, base
			}
		}
	}
	return docMetric{}, ""
}

var (
	labelValuesRE  = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	promGroupRE    = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	promStringRE   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promRangeRE    = regexp.MustCompile(`\[[^\]]*\]`)
	promSelectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}`)
	promMatcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
	promIdentRE    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promLabelRE    = regexp.MustCompile(`[a-zA-Z_][a-zA-Z0-9_]*`)
)

// promQLNames returns the metric names a PromQL expression selects and
// the label names it matches or groups by. Function names (followed by a
// parenthesis) and the operators' keywords are neither; Grafana's
// variables ($__rate_interval) sit in ranges and strings, which are left
// out.
func promQLNames(expr string) (metrics, labels []string) {
	s := promGroupRE.ReplaceAllStringFunc(expr, func(g string) string {
		inner := promGroupRE.FindStringSubmatch(g)[2]
		labels = append(labels, promLabelRE.FindAllString(inner, -1)...)
		return " "
	})
	s = promStringRE.ReplaceAllString(s, `""`)
	s = promRangeRE.ReplaceAllString(s, " ")
	s = promSelectorRE.ReplaceAllStringFunc(s, func(sel string) string {
		m := promSelectorRE.FindStringSubmatch(sel)
		for _, mm := range promMatcherRE.FindAllStringSubmatch(m[2], -1) {
			labels = append(labels, mm[1])
		}
		return " " + m[1] + " "
	})
	for _, id := range promIdentRE.FindAllString(s, -1) {
		if strings.HasSuffix(id, "(") || slices.Contains([]string{"and", "or", "unless", "bool", "offset"}, id) {
			continue
		}
		metrics = append(metrics, id)
	}
	return metrics, labels
}

// TestPromQLNames: the extraction the dashboard's test relies on.
func TestPromQLNames(t *testing.T) {
	m, l := promQLNames(`histogram_quantile(0.99, sum by (le, operation) (rate(spool_store_duration_seconds_bucket{operation!~"a|b",kind="x"}[$__rate_interval]))) or max(spool_queue_jobs) / on(queue) up`)
	if want := []string{"spool_store_duration_seconds_bucket", "spool_queue_jobs", "up"}; !slices.Equal(m, want) {
		t.Errorf("metrics %q, want %q", m, want)
	}
	if want := []string{"le", "operation", "queue", "operation", "kind"}; !slices.Equal(l, want) {
		t.Errorf("labels %q, want %q", l, want)
	}
}
