// Command genref writes docs/CONFIGURATION.md, the configuration file's
// reference, from the config types: the keys and types by reflection over
// the yaml tags (what the loader accepts), the descriptions from the
// fields' doc comments, the defaults from Complete, the variables from
// config.Variables. Run from the repository root:
//
//	go run ./internal/config/genref
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/latchkey/latchkey/internal/config"
)

// Output is the reference, relative to the repository root.
const Output = "docs/CONFIGURATION.md"

func main() {
	out, missing, err := Generate(".")
	if err == nil && len(missing) > 0 {
		err = fmt.Errorf("keys without a description: %s", strings.Join(missing, ", "))
	}
	if err == nil {
		err = os.WriteFile(Output, out, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genref:", err)
		os.Exit(1)
	}
}

// comments maps "Type.Field" of package config to the field's comment, and
// "Type" to the type's.
func comments(root string) (map[string]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, "internal", "config", "*.go"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil {
					doc = g.Doc
				}
				out[ts.Name.Name] = text(doc)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					c := text(fl.Doc)
					if c == "" {
						c = text(fl.Comment)
					}
					for _, n := range fl.Names {
						out[ts.Name.Name+"."+n.Name] = c
					}
				}
			}
		}
	}
	return out, nil
}

func text(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

// describe turns a Go comment into a table cell: the field's Go name at
// the start is dropped ("DeviceCodeLifetime is how long" -> "How long").
func describe(goName, c string) string {
	for _, p := range []string{goName + " is ", goName + " are ", goName + ": ", goName + ", ", goName + " "} {
		if rest, ok := strings.CutPrefix(c, p); ok {
			c = rest
			break
		}
	}
	// A sentence starts with a capital; a value (client_secret_basic,
	// sqlite:PATH) keeps its spelling.
	if first, _, _ := strings.Cut(c, " "); c != "" && !strings.ContainsAny(first, "_:/.") {
		c = strings.ToUpper(c[:1]) + c[1:]
	}
	return strings.ReplaceAll(c, "|", `\|`)
}

type section struct {
	path, typeName string
	t              reflect.Type
	v              reflect.Value
}

// Generate returns the reference and the keys that have no description.
func Generate(root string) ([]byte, []string, error) {
	docs, err := comments(root)
	if err != nil {
		return nil, nil, err
	}
	// Defaults: a config with one of each list item, completed (validation
	// fails on the empty items, but every default is filled before it).
	def := &config.Config{Clients: []config.Client{{}}, APIUsers: []config.APIUser{{}}, Persons: []config.Person{{}}}
	_ = def.Complete()
	vars := map[string]string{}
	for _, v := range config.Variables() {
		vars[v.Key] = v.Name
	}
	var b bytes.Buffer
	b.WriteString("# Configuration reference\n\n")
	b.WriteString("Generated from the types of `internal/config` by `go run ./internal/config/genref`; do not edit by hand\n")
	b.WriteString("(`go test ./internal/config/genref` fails when this page and the code differ).\n\n")
	b.WriteString("Every key is optional. A `LATCHKEY_*` variable, where a key has one, overrides the file; lists come\n")
	b.WriteString("only from the file. Unknown keys are an error. Durations are written as `90s`, `15m`, `1h` or `30d`.\n")
	var missing []string
	queue := []section{{"", "Config", reflect.TypeFor[config.Config](), reflect.ValueOf(def).Elem()}}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		title := s.path
		if title == "" {
			title = "Top-level keys"
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		if s.path != "" {
			if d := describe(s.typeName, docs[s.typeName]); d != "" {
				b.WriteString(d + "\n\n")
			}
		}
		b.WriteString("| key | type | default | variable | what it does |\n|---|---|---|---|---|\n")
		for i := range s.t.NumField() {
			f := s.t.Field(i)
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if key == "" || key == "-" || !f.IsExported() {
				continue
			}
			path := key
			if s.path != "" {
				path = s.path + "." + key
			}
			fv := s.v.Field(i)
			desc := describe(f.Name, docs[s.typeName+"."+f.Name])
			typ, sub := typeOf(f.Type)
			if sub != nil {
				subPath := path
				subV := fv
				if f.Type.Kind() == reflect.Slice {
					subPath += "[]"
					subV = fv.Index(0)
				}
				if desc == "" {
					desc = describe(sub.Name(), docs[sub.Name()])
				}
				desc += fmt.Sprintf(" See [%s](#%s).", subPath, anchor(subPath))
				queue = append(queue, section{subPath, sub.Name(), sub, subV})
			}
			if strings.TrimSpace(strings.TrimSuffix(desc, "See")) == "" || strings.HasPrefix(desc, " See") {
				missing = append(missing, path)
			}
			env := vars[path]
			if env != "" {
				env = "`" + env + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", key, typ, defaultOf(fv, sub != nil), env, desc)
		}
	}
	return b.Bytes(), missing, nil
}

// anchor is GitHub's anchor of a heading made of a key path.
func anchor(path string) string {
	return strings.NewReplacer(".", "", "[", "", "]", "").Replace(path)
}

// typeOf names t as a reader of YAML sees it; sub is the struct of a
// nested section.
func typeOf(t reflect.Type) (string, reflect.Type) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[config.Duration]():
		return "duration", nil
	case t.Kind() == reflect.Struct:
		return "section", t
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return "list of items", t.Elem()
	case t.Kind() == reflect.Slice:
		return "list of " + t.Elem().Kind().String() + "s", nil
	case t.Kind() == reflect.Map:
		return "map", nil
	case t.Kind() == reflect.Int:
		return "integer", nil
	}
	return t.Kind().String(), nil
}

func defaultOf(v reflect.Value, nested bool) string {
	if nested {
		return ""
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	var s string
	switch {
	case v.Type() == reflect.TypeFor[config.Duration]():
		s = config.FormatDuration(time.Duration(v.Int()))
	case v.Kind() == reflect.Map:
		var kv []string
		for _, k := range v.MapKeys() {
			kv = append(kv, fmt.Sprintf("%v: %v", k, v.MapIndex(k)))
		}
		sort.Strings(kv)
		s = strings.Join(kv, ", ")
	case v.Kind() == reflect.Slice:
		var items []string
		for i := range v.Len() {
			items = append(items, fmt.Sprint(v.Index(i)))
		}
		s = strings.Join(items, ", ")
	case v.Kind() == reflect.Bool:
		s = fmt.Sprint(v.Bool())
	case v.IsZero():
		return ""
	default:
		s = fmt.Sprint(v.Interface())
	}
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}
