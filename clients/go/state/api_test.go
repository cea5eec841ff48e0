package state

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The doc page of Herrscher's Go package is the API this package must have exactly; a copy
// is committed in testdata so the check runs in every clone (`npm run references` compares it
// with its source where that is at hand).
const apiDoc = "testdata/go-state-package-doc.txt"

// declarationsOfDoc turns the doc page's declarations (type blocks and func signatures) into
// Go source and parses it.
func declarationsOfDoc(t *testing.T) []ast.Decl {
	t.Helper()
	b, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	src.WriteString("package doc\n")
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "type ") && strings.HasSuffix(l, "{"):
			for ; i < len(lines); i++ {
				src.WriteString(lines[i] + "\n")
				if lines[i] == "}" {
					break
				}
			}
		case strings.HasPrefix(l, "func ") && !strings.HasSuffix(l, " "):
			// A signature; the heading above it ("func Name ") ends with a space.
			src.WriteString(l + "\n")
		}
	}
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", src.String(), 0)
	if err != nil {
		t.Fatalf("the doc's declarations do not parse: %v\n%s", err, src.String())
	}
	return f.Decls
}

func declarationsOfPackage(t *testing.T) []ast.Decl {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var decls []ast.Decl
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	return decls
}

func render(n interface{}) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, token.NewFileSet(), n)
	return b.String()
}

// exportedAPI lists every exported declaration as one comparable line each: a func or
// method's signature, a struct field's name, type and tag, a const or var's name.
func exportedAPI(decls []ast.Decl) []string {
	var out []string
	for _, d := range decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv != nil {
				recv := render(d.Recv.List[0].Type)
				if !ast.IsExported(strings.TrimPrefix(recv, "*")) {
					continue
				}
			}
			sig := &ast.FuncDecl{Recv: d.Recv, Name: d.Name, Type: d.Type}
			out = append(out, render(sig))
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					st, ok := s.Type.(*ast.StructType)
					if !ok {
						out = append(out, "type "+s.Name.Name+" "+render(s.Type))
						continue
					}
					out = append(out, "type "+s.Name.Name+" struct")
					for _, f := range st.Fields.List {
						tag := ""
						if f.Tag != nil {
							tag = f.Tag.Value
						}
						for _, n := range f.Names {
							if n.IsExported() {
								out = append(out, s.Name.Name+"."+n.Name+" "+render(f.Type)+" "+tag)
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, d.Tok.String()+" "+n.Name)
						}
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestExportedAPIIsTheGoPackages(t *testing.T) {
	want := exportedAPI(declarationsOfDoc(t))
	got := exportedAPI(declarationsOfPackage(t))
	if len(want) < 40 {
		t.Fatalf("the doc gave only %d declarations: the parse of %s is broken", len(want), apiDoc)
	}
	if !reflect.DeepEqual(got, want) {
		missing, extra := diff(want, got), diff(got, want)
		t.Fatalf("the exported API differs from %s\nmissing or different:\n  %s\nnot in the doc:\n  %s", apiDoc, strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
	}
	// Field order is part of the JSON shape (Go writes keys in field order).
	if !reflect.DeepEqual(fieldOrder(declarationsOfPackage(t)), fieldOrder(declarationsOfDoc(t))) {
		t.Fatal("struct fields are not in the doc's order")
	}
}

func fieldOrder(decls []ast.Decl) map[string][]string {
	out := map[string][]string{}
	for _, d := range decls {
		if g, ok := d.(*ast.GenDecl); ok {
			for _, spec := range g.Specs {
				if s, ok := spec.(*ast.TypeSpec); ok && s.Name.IsExported() {
					if st, ok := s.Type.(*ast.StructType); ok {
						for _, f := range st.Fields.List {
							for _, n := range f.Names {
								if n.IsExported() {
									out[s.Name.Name] = append(out[s.Name.Name], n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	return out
}

func diff(a, b []string) []string {
	in := map[string]bool{}
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if !in[s] {
			out = append(out, s)
		}
	}
	return out
}

// The check itself must catch a difference: a signature changed in the doc's text is found.
func TestAPICheckSeesADifference(t *testing.T) {
	got := exportedAPI(declarationsOfPackage(t))
	changed := append([]string{}, got...)
	for i, s := range changed {
		if strings.Contains(s, "func LoadState(") {
			changed[i] = strings.Replace(s, "path string", "p string", 1)
		}
	}
	if reflect.DeepEqual(got, changed) {
		t.Fatal("LoadState not among the exported API")
	}
}
