package lazyre

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Every lazyre.New of the code base compiles: New defers the panic of a
// bad expression from program start to its first match, so this test is
// where a typo fails.
func TestEveryExpressionCompiles(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "New" {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "lazyre" {
				return true
			}
			rel, _ := filepath.Rel(root, path)
			lit, ok := call.Args[0].(*ast.BasicLit)
			if len(call.Args) != 1 || !ok || lit.Kind != token.STRING {
				t.Errorf("%s: lazyre.New of something other than a string literal", rel)
				return true
			}
			expr, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Errorf("%s: %v", rel, err)
				return true
			}
			if _, err := regexp.Compile(expr); err != nil {
				t.Errorf("%s: %v", rel, err)
			}
			found++
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 10 { // a sanity bound: the code base has 16 today
		t.Errorf("found %d expressions; the walk missed the code base", found)
	}
}

func TestMatchesAsRegexp(t *testing.T) {
	r := New(`^[a-z]{2,3}$`)
	for s, want := range map[string]bool{"en": true, "eng": true, "e": false, "engl": false, "EN": false, "": false} {
		if got := r.MatchString(s); got != want {
			t.Errorf("MatchString(%q) = %v, want %v", s, got, want)
		}
	}
	if got := New(`field (\S+) not found`).ReplaceAllString("field x not found", "unknown $1"); got != "unknown x" {
		t.Errorf("ReplaceAllString = %q", got)
	}
}
