package pgstore

import (
	"reflect"
	"testing"
)

// A group's columns go typed where every value has the type, as they are
// where one is NULL.
func TestInsertColumnsTyped(t *testing.T) {
	group := []*pending[*newJob]{
		{item: &newJob{args: []any{"a", int32(1), int64(10), nil, []byte("x")}}},
		{item: &newJob{args: []any{"b", int32(2), int64(20), "r", []byte(nil)}}},
	}
	for c, want := range []any{[]string{"a", "b"}, []int32{1, 2}, []int64{10, 20}, []any{nil, "r"}, []any{[]byte("x"), []byte(nil)}} {
		if got := column(group, c); !reflect.DeepEqual(got, want) {
			t.Errorf("column %d = %#v, want %#v", c, got, want)
		}
	}
	group[1].item.args[0] = nil // a NULL after a string
	if got := column(group, 0); !reflect.DeepEqual(got, []any{"a", nil}) {
		t.Errorf("column with a NULL = %#v, want it as it is", got)
	}
}
