// Package lazyre is a regular expression compiled at its first use rather
// than at program start: a package-level regexp.MustCompile runs at every
// start of every command, and the counted repetitions of our validators
// ({43,128}) compile to large programs.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regexp.Regexp compiled on first use.
type Regexp struct {
	re func() *regexp.Regexp
}

// New is regexp.MustCompile(expr), deferred to the first match: an
// invalid expr panics there. Every expression of the code base is
// compiled by TestEveryExpressionCompiles.
func New(expr string) *Regexp {
	return &Regexp{re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
}

// MatchString is regexp.Regexp's.
func (r *Regexp) MatchString(s string) bool { return r.re().MatchString(s) }

// ReplaceAllString is regexp.Regexp's.
func (r *Regexp) ReplaceAllString(src, repl string) string { return r.re().ReplaceAllString(src, repl) }

// FindStringSubmatch is regexp.Regexp's.
func (r *Regexp) FindStringSubmatch(s string) []string { return r.re().FindStringSubmatch(s) }
