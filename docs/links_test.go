// Package docs holds no code: its test checks that the references between
// the repository's docs, and from code comments into them, still land when
// a doc is rewritten (PERFORMANCE.md went from a notebook to a ledger).
package docs

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package's folder.
const root = ".."

var (
	fence = regexp.MustCompile("(?s)```.*?```")
	// A Markdown link or image: [text](target).
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// An ATX heading.
	heading = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$`)
	// A section named in prose or a comment: docs/DEPLOY.md, "Backups" (the
	// file name may sit in backticks).
	sectionRef = regexp.MustCompile("((?:docs/)?[A-Za-z0-9_-]+\\.md)`?,[ \t]+\"([^\"]+)\"")
	// Comment continuations of Go and SQL, joined before sectionRef looks.
	continuation = regexp.MustCompile(`\n[ \t]*(//|--)[ \t]*`)
)

// sources lists the files whose references are checked: every .md, .go and
// .sql file of the repository outside testdata and build output.
func sources(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "bin", "latchkey-data", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".md", ".go", ".sql":
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no files found under the repository root")
	}
	return out
}

// slug is the anchor GitHub gives a heading: lower case, punctuation
// dropped (hyphens and underscores kept), spaces as hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(doc []byte) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllSubmatch(fence.ReplaceAll(doc, nil), -1) {
		base := slug(string(m[1]))
		s := base
		for i := 1; out[s]; i++ { // GitHub numbers repeated headings
			s = base + "-" + strconv.Itoa(i)
		}
		out[s] = true
	}
	return out
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMarkdownLinksLand: every relative link of every doc names a file that
// exists, and its #anchor a heading of that file.
func TestMarkdownLinksLand(t *testing.T) {
	checked := 0
	for _, src := range sources(t) {
		if filepath.Ext(src) != ".md" {
			continue
		}
		text := fence.ReplaceAll(read(t, src), nil)
		for _, m := range mdLink.FindAllSubmatch(text, -1) {
			target := string(m[1])
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := src
			if path != "" {
				dest = filepath.Join(filepath.Dir(src), path)
			}
			checked++
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %q names no file", src, target)
				continue
			}
			if anchor != "" && filepath.Ext(dest) == ".md" && !anchors(read(t, dest))[anchor] {
				t.Errorf("%s: link %q names no heading of %s", src, target, dest)
			}
		}
	}
	if checked == 0 {
		t.Error("no relative link found: the pattern or the walk is wrong")
	}
}

// TestNamedSectionsExist: where a doc or a comment sends the reader to a
// section by name (docs/DEPLOY.md, "Backups"), that doc still says it.
// Names of files outside the repository (the shared spec) are skipped.
func TestNamedSectionsExist(t *testing.T) {
	checked := 0
	for _, src := range sources(t) {
		text := read(t, src)
		if filepath.Ext(src) != ".md" {
			text = continuation.ReplaceAll(text, []byte(" "))
		}
		for _, m := range sectionRef.FindAllSubmatch(text, -1) {
			name, section := string(m[1]), string(m[2])
			dest := filepath.Join(root, name)
			if !strings.HasPrefix(name, "docs/") {
				if _, err := os.Stat(dest); err != nil {
					dest = filepath.Join(root, "docs", name)
				}
			}
			doc, err := os.ReadFile(dest)
			if err != nil {
				if strings.HasPrefix(name, "docs/") {
					t.Errorf("%s: names %s, which does not exist", src, name)
				}
				continue // not a doc of this repository
			}
			checked++
			if !bytes.Contains(bytes.ToLower(squeeze(doc)), bytes.ToLower(squeeze([]byte(section)))) {
				t.Errorf("%s: sends the reader to %s, %q, which that doc no longer says", src, name, section)
			}
		}
	}
	if checked == 0 {
		t.Error("no named section found: the pattern or the walk is wrong")
	}
}

// squeeze folds runs of white space into one space, so that a name wrapped
// over two lines still matches.
func squeeze(b []byte) []byte { return []byte(strings.Join(strings.Fields(string(b)), " ")) }
