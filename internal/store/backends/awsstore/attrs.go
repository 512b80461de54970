package awsstore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// item is a DynamoDB item or key.
type item = map[string]types.AttributeValue

func num[T ~int | ~int32 | ~int64](v T) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(int64(v), 10)}
}

func str(s string) types.AttributeValue   { return &types.AttributeValueMemberS{Value: s} }
func bin(b []byte) types.AttributeValue   { return &types.AttributeValueMemberB{Value: b} }
func boolean(b bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: b} }

// getInt reads a number attribute (0 when absent).
func getInt(it item, name string) (int64, error) {
	v, ok := it[name]
	if !ok {
		return 0, nil
	}
	n, ok := v.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %s is %T, want a number", name, v)
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s: %w", name, err)
	}
	return i, nil
}

// getStr reads a string attribute ("" when absent).
func getStr(it item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// getBin reads a binary attribute (nil when absent).
func getBin(it item, name string) []byte {
	if v, ok := it[name].(*types.AttributeValueMemberB); ok {
		return v.Value
	}
	return nil
}

func getBool(it item, name string) bool {
	v, ok := it[name].(*types.AttributeValueMemberBOOL)
	return ok && v.Value
}

// ints reads several number attributes, stopping at the first bad one.
type ints struct {
	it  item
	err error
}

func (r *ints) get(name string) int64 {
	if r.err != nil {
		return 0
	}
	v, err := getInt(r.it, name)
	r.err = err
	return v
}

// expr builds the names and values of an expression. Every attribute goes
// through a #placeholder: DynamoDB reserves many plain words (sequence,
// state, ttl, …), and one rule for all is simpler than remembering which.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// n returns the placeholder of an attribute name.
func (e *expr) n(attr string) string {
	p := "#" + attr
	e.names[p] = attr
	return p
}

// v returns the placeholder of a value.
func (e *expr) v(val types.AttributeValue) string {
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = val
	return p
}

// eq is "attr = value".
func (e *expr) eq(attr string, val types.AttributeValue) string {
	return e.n(attr) + " = " + e.v(val)
}

// and joins conditions.
func and(conds ...string) string { return strings.Join(conds, " AND ") }

// valuesOrNil returns the values, or nil when there are none (DynamoDB
// refuses an empty map).
func (e *expr) valuesOrNil() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// update collects the clauses of an update expression.
type update struct {
	e      *expr
	set    []string
	remove []string
	add    []string
	// bumped: the update adds to rev, a change watchers wake for.
	bumped bool
}

func newUpdate(e *expr) *update { return &update{e: e} }

func (u *update) Set(attr string, val types.AttributeValue) *update {
	u.set = append(u.set, u.e.n(attr)+" = "+u.e.v(val))
	return u
}

// SetExpr sets attr to an expression built with u.e.
func (u *update) SetExpr(attr, expression string) *update {
	u.set = append(u.set, u.e.n(attr)+" = "+expression)
	return u
}

func (u *update) Remove(attrs ...string) *update {
	for _, a := range attrs {
		u.remove = append(u.remove, u.e.n(a))
	}
	return u
}

// Add adds val to a number attribute, or its members to a set.
func (u *update) Add(attr string, val types.AttributeValue) *update {
	u.add = append(u.add, u.e.n(attr)+" "+u.e.v(val))
	return u
}

// BumpRev adds one to the job's change counter.
func (u *update) BumpRev() *update {
	u.bumped = true
	return u.Add(aRev, num(1))
}

func (u *update) String() string {
	var parts []string
	if len(u.set) > 0 {
		parts = append(parts, "SET "+strings.Join(u.set, ", "))
	}
	if len(u.remove) > 0 {
		parts = append(parts, "REMOVE "+strings.Join(u.remove, ", "))
	}
	if len(u.add) > 0 {
		parts = append(parts, "ADD "+strings.Join(u.add, ", "))
	}
	return strings.Join(parts, " ")
}
