package main

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestReplaceTableKeepsTheRestOfThePage(t *testing.T) {
	page := "# Figures\n\nbefore\n" + beginMark("goals") + "\n| old |\n" + endMark("goals") + "\nafter\n"
	tb := &table{id: "goals", command: "go run ./bench -goals"}
	tb.rows = [][]string{{"measure", "spool"}, {"lines/s", "1,000 | 2"}}
	out, err := replaceTable([]byte(page), "goals", tb.markdown(time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{"# Figures\n\nbefore\n", "| measure | spool |\n|---|---|\n| lines/s | 1,000 \\| 2 |\n",
		"Measured by `go run ./bench -goals` on 2026-11-27", endMark("goals") + "\nafter\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the page lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| old |") {
		t.Errorf("the old table is still there:\n%s", got)
	}
}

func TestReplaceTableRefusesAPageWithoutItsMarks(t *testing.T) {
	if _, err := replaceTable([]byte("no marks here"), "goals", "x"); !errors.Is(err, errNoMarks) {
		t.Errorf("a page without marks: %v, want errNoMarks", err)
	}
	if _, err := replaceTable([]byte(beginMark("goals")+"\n| table |"), "goals", "x"); err == nil || errors.Is(err, errNoMarks) {
		t.Errorf("a table that begins and never ends: %v, want an error that says so", err)
	}
}

// TestEveryTableHasItsPlaceInDocs reads the tables this program makes
// (each newTable call) and the marks in docs/: every table is shown
// somewhere, and every mark belongs to a table the bench still makes, so a
// figure in docs/ is always one a command printed.
func TestEveryTableHasItsPlaceInDocs(t *testing.T) {
	made := tableIDs(t)
	if len(made) == 0 {
		t.Fatal("found no newTable calls in bench/")
	}
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in ../docs: %v", err)
	}
	marked := map[string]string{}
	mark := regexp.MustCompile(`<!-- bench:([a-z]+) begin`)
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mark.FindAllStringSubmatch(string(b), -1) {
			id := m[1]
			if !strings.Contains(string(b), beginMark(id)) || !strings.Contains(string(b), endMark(id)) {
				t.Errorf("%s: the marks of the %s table are not %q ... %q", p, id, beginMark(id), endMark(id))
			}
			if !slices.Contains(made, id) {
				t.Errorf("%s has a place for the %s table, which bench no longer makes", p, id)
			}
			marked[id] = p
		}
	}
	for _, id := range made {
		if marked[id] == "" {
			t.Errorf("bench makes the %s table but no page of docs/ shows it: add %q and %q where it belongs", id, beginMark(id), endMark(id))
		}
	}
}

// tableIDs are the first arguments of the newTable calls in this package.
func tableIDs(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if fn, ok := call.Fun.(*ast.Ident); ok && fn.Name == "newTable" && len(call.Args) > 0 {
				if lit, ok := call.Args[0].(*ast.BasicLit); ok {
					id, _ := strconv.Unquote(lit.Value)
					ids = append(ids, id)
				}
			}
			return true
		})
	}
	return ids
}
