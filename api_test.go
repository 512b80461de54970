package spool_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/spool-run/spool"

// publicPackages are the packages users import: what they export is
// spool's Go API.
var publicPackages = []string{
	module, module + "/client", module + "/worker", module + "/server",
	module + "/spooltest", module + "/consumer", module + "/itembatch",
}

// TestAPINamesNoWireType: no exported function, method, field, variable or
// constant of the public packages names a type of the wire's generated
// code (gen/...), however deep in its signature. The wire schema is the
// transport; a change to a .proto file must not be a change to the Go API.
func TestAPINamesNoWireType(t *testing.T) {
	imp := exportImporter(t, publicPackages)
	var offenders []string
	for _, path := range publicPackages {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("load %s: %v", path, err)
		}
		offenders = append(offenders, wireTypesIn(pkg)...)
	}
	if len(offenders) > 0 {
		t.Errorf("the public API names the wire's types (use spool's own, converted in internal/convert):\n\t%s", strings.Join(offenders, "\n\t"))
	}
}

// TestAPICheckFindsOffenders: the check above sees a wire type where it
// hides: in a result, behind a pointer, a slice and a type argument, in
// a field of a struct, and in a method promoted from an embedded field.
func TestAPICheckFindsOffenders(t *testing.T) {
	imp := exportImporter(t, []string{module + "/gen/spool/v1", "iter"})
	wire, err := imp.Import(module + "/gen/spool/v1")
	if err != nil {
		t.Fatal(err)
	}
	iterPkg, err := imp.Import("iter")
	if err != nil {
		t.Fatal(err)
	}
	job := types.NewPointer(wire.Scope().Lookup("Job").Type())
	errType := types.Universe.Lookup("error").Type()
	seq, err := types.Instantiate(nil, iterPkg.Scope().Lookup("Seq2").Type(), []types.Type{types.NewSlice(job), errType}, true)
	if err != nil {
		t.Fatal(err)
	}

	pkg := types.NewPackage(module+"/fake", "fake")
	result := func(ts ...types.Type) *types.Tuple {
		var vs []*types.Var
		for _, t := range ts {
			vs = append(vs, types.NewParam(token.NoPos, pkg, "", t))
		}
		return types.NewTuple(vs...)
	}
	pkg.Scope().Insert(types.NewFunc(token.NoPos, pkg, "Jobs", types.NewSignatureType(nil, nil, nil, nil, result(seq), false)))
	pkg.Scope().Insert(types.NewFunc(token.NoPos, pkg, "Fine", types.NewSignatureType(nil, nil, nil, nil, result(errType), false)))
	holder := types.NewTypeName(token.NoPos, pkg, "Holder", nil)
	types.NewNamed(holder, types.NewStruct([]*types.Var{
		types.NewField(token.NoPos, pkg, "Job", job, false),
		types.NewField(token.NoPos, pkg, "hidden", job, false), // unexported: users cannot reach it
	}, nil), nil)
	pkg.Scope().Insert(holder)
	lease := types.NewTypeName(token.NoPos, pkg, "Lease", nil)
	types.NewNamed(lease, types.NewStruct([]*types.Var{
		types.NewField(token.NoPos, pkg, "JobLease", types.NewPointer(wire.Scope().Lookup("JobLease").Type()), true),
	}, nil), nil)
	pkg.Scope().Insert(lease)

	got := wireTypesIn(pkg)
	for _, want := range []string{"fake.Jobs", "fake.Holder.Job", "fake.Lease.JobLease", "fake.Lease.GetJob"} {
		if !slices.ContainsFunc(got, func(o string) bool { return strings.HasPrefix(o, want+": ") }) {
			t.Errorf("the check misses %s; it found:\n\t%s", want, strings.Join(got, "\n\t"))
		}
	}
	for _, o := range got {
		if strings.HasPrefix(o, "fake.Fine") || strings.HasPrefix(o, "fake.Holder.hidden") {
			t.Errorf("the check blames what users cannot reach or what is fine: %s", o)
		}
	}
}

// exportImporter imports packages from the compiler's export data, which
// `go list -export` builds (through the build cache): the types of a
// package without type-checking all it depends on from source.
func exportImporter(t *testing.T, paths []string) types.Importer {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Export"}, paths...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
	}
	return importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f := exports[path]
		if f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
}

// wireTypesIn names each exported part of pkg whose type mentions a wire
// type, and which.
func wireTypesIn(pkg *types.Package) []string {
	var out []string
	report := func(where string, t types.Type) {
		if w := wireType(t, map[types.Type]bool{}); w != nil {
			out = append(out, fmt.Sprintf("%s: %s", where, types.TypeString(w, func(p *types.Package) string { return p.Name() })))
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		where := pkg.Name() + "." + name
		tn, ok := obj.(*types.TypeName)
		if !ok {
			report(where, obj.Type()) // a function, variable or constant
			continue
		}
		if st, ok := tn.Type().Underlying().(*types.Struct); ok {
			for f := range st.Fields() {
				if f.Exported() || f.Embedded() {
					report(where+"."+f.Name(), f.Type())
				}
			}
		} else if _, isIface := tn.Type().Underlying().(*types.Interface); !isIface {
			report(where, tn.Type().Underlying())
		}
		// The method set of *T holds T's methods, those promoted from
		// embedded fields and, for an interface, its methods.
		ms := types.NewMethodSet(types.NewPointer(tn.Type()))
		if types.IsInterface(tn.Type()) {
			ms = types.NewMethodSet(tn.Type())
		}
		for sel := range ms.Methods() {
			if sel.Obj().Exported() {
				report(where+"."+sel.Obj().Name(), sel.Type())
			}
		}
	}
	return out
}

// wireType is the first wire type t mentions: itself, what it points to or
// holds, its parameters and results, its type arguments, and for a type of
// spool's internal packages (which users receive but cannot name) what it
// is made of. Types of other public packages are checked on their own.
func wireType(t types.Type, seen map[types.Type]bool) types.Type {
	if seen[t] {
		return nil
	}
	seen[t] = true
	switch t := types.Unalias(t).(type) {
	case *types.Named:
		path := ""
		if p := t.Obj().Pkg(); p != nil {
			path = p.Path()
		}
		if strings.HasPrefix(path, module+"/gen/") {
			return t
		}
		for arg := range t.TypeArgs().Types() {
			if w := wireType(arg, seen); w != nil {
				return w
			}
		}
		if strings.HasPrefix(path, module+"/internal/") {
			return wireType(t.Underlying(), seen)
		}
	case *types.Pointer:
		return wireType(t.Elem(), seen)
	case *types.Slice:
		return wireType(t.Elem(), seen)
	case *types.Array:
		return wireType(t.Elem(), seen)
	case *types.Chan:
		return wireType(t.Elem(), seen)
	case *types.Map:
		if w := wireType(t.Key(), seen); w != nil {
			return w
		}
		return wireType(t.Elem(), seen)
	case *types.Signature:
		for _, tuple := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tuple.Variables() {
				if w := wireType(v.Type(), seen); w != nil {
					return w
				}
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() || f.Embedded() {
				if w := wireType(f.Type(), seen); w != nil {
					return w
				}
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if w := wireType(m.Type(), seen); w != nil {
				return w
			}
		}
	}
	return nil
}
