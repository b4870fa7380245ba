package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/latchkey/latchkey/internal/config"
)

const root = "../../.."

// The committed reference is what the generator writes now, and every key
// has a description; the failure names the keys.
func TestReferenceIsCurrent(t *testing.T) {
	want, missing, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range missing {
		t.Errorf("%s has no description: add a doc comment to its field in internal/config", k)
	}
	got, err := os.ReadFile(filepath.Join(root, Output))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			if i >= len(gl) || i >= len(wl) || gl[i] != wl[i] {
				line := ""
				if i < len(wl) {
					line = wl[i]
				}
				t.Errorf("%s differs from the code at line %d (want %q): run go run ./internal/config/genref", Output, i+1, line)
				break
			}
		}
	}
}

// keyPaths lists every key the loader's types accept, by their yaml tags.
func keyPaths(typ reflect.Type, prefix string) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		out = append(out, prefix+key)
		ft := f.Type
		sub := prefix + key + "."
		if ft.Kind() == reflect.Slice {
			ft, sub = ft.Elem(), prefix+key+"[]."
		}
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[config.Duration]() {
			out = append(out, keyPaths(ft, sub)...)
		}
	}
	return out
}

// The keys of the reference are exactly the keys the loader accepts: each
// one decodes with unknown keys refused, as Load decodes, and each yaml
// tag of the config types is in it.
func TestReferenceKeysAreTheLoadersKeys(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root, Output))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	section := ""
	row := regexp.MustCompile("^\\| `([a-z0-9_]+)` \\|")
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section = h
			if section == "Top-level keys" {
				section = ""
			}
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil {
			p := m[1]
			if section != "" {
				p = section + "." + p
			}
			documented[p] = true
		}
	}
	for _, k := range keyPaths(reflect.TypeFor[config.Config](), "") {
		if !documented[k] {
			t.Errorf("%s is accepted by the loader but missing from %s", k, Output)
		}
		delete(documented, k)
	}
	for k := range documented {
		t.Errorf("%s is in %s but no config field has that key", k, Output)
	}
	for _, k := range append(keyPaths(reflect.TypeFor[config.Config](), ""), "no_such_key") {
		var c config.Config
		dec := yaml.NewDecoder(strings.NewReader(nested(k)))
		dec.KnownFields(true)
		err := dec.Decode(&c)
		if k == "no_such_key" && err == nil {
			t.Error("an unknown key decoded: the check proves nothing")
		}
		if k != "no_such_key" && err != nil {
			t.Errorf("%s: the loader's decoding refuses it: %v", k, err)
		}
	}
}

// nested writes path ("clients[].client_id") as YAML with a null value.
func nested(path string) string {
	var b strings.Builder
	indent := ""
	for _, p := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(p, "[]")
		b.WriteString(indent + name + ":\n")
		indent += "  "
		if list {
			b.WriteString(indent + "-\n")
			indent += "  "
		}
	}
	return b.String()
}
