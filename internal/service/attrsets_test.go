package service

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// The counters' attributes by queue and state are made once each and say
// what they are for; past the bound they are still right, only not kept.
func TestAttrSets(t *testing.T) {
	var a attrSets
	setOf := func(o metric.MeasurementOption) attribute.Set {
		return metric.NewAddConfig([]metric.AddOption{o.(metric.AddOption)}).Attributes()
	}
	got := setOf(a.of("builds", "succeeded"))
	if want := attribute.NewSet(attribute.String("queue", "builds"), attribute.String("state", "succeeded")); !got.Equals(&want) {
		t.Fatalf("attributes %v, want %v", got.ToSlice(), want.ToSlice())
	}
	if got := setOf(a.of("builds", "")); got.Len() != 1 || got.ToSlice()[0] != attribute.String("queue", "builds") {
		t.Fatalf("by queue alone: %v", got.ToSlice())
	}
	if n := testing.AllocsPerRun(100, func() { a.of("builds", "succeeded") }); n != 0 {
		t.Fatalf("a kept set cost %.0f objects", n)
	}
	for i := range maxAttrSets + 10 {
		a.of(fmt.Sprintf("q%d", i), "")
	}
	if len(a.sets) != maxAttrSets {
		t.Fatalf("%d sets kept, want at most %d", len(a.sets), maxAttrSets)
	}
	if got := setOf(a.of("q-late", "failed")); got.Len() != 2 {
		t.Fatalf("past the bound: %v", got.ToSlice())
	}
}
