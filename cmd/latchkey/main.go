// Command latchkey is the latchkey identity and access service.
//
//	latchkey serve [--config FILE] [--demo]
//	latchkey migrate [--config FILE]
//	latchkey person show|block|unblock|delete ...
//	latchkey client create|list|show|delete|rotate-secret ...
//	latchkey keys list|rotate [--now]|retire KID [--config FILE]
//	latchkey backup [--config FILE] OUT
//	latchkey version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/latchkey/latchkey/internal/store/sqlstore"
)

// version, commit and buildDate are set at build time with -ldflags
// "-X main.version=... -X main.commit=... -X main.buildDate=..." (Makefile,
// Dockerfile); without them they come from Go's build info (its VCS stamp,
// which GOFLAGS=-buildvcs=false or a build outside git leaves out).
var (
	version   = ""
	commit    = ""
	buildDate = ""
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code. Every failure
// is reported as one line on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText())
		return 2
	}
	// Every command that opens the store for writing (client, keys rotate,
	// person block…) applies an upgrade's migrations: it tells them on
	// stderr. serve logs them and migrate prints them instead.
	ctx = sqlstore.WithMigrationTrace(ctx, printedTrace(stderr))
	var err error
	if path, ok := helpRequest(args); ok {
		err = help(path, stdout)
	} else {
		err = dispatch(ctx, args, stdout, stderr)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "latchkey: %s\n", oneLine(err.Error()))
			return 2
		}
		fmt.Fprintf(stderr, "latchkey: %s\n", oneLine(err.Error()))
		return 1
	}
	return 0
}

// dispatch runs the command of the table that args name.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch args[0] {
	case "bench-ceiling": // a child of bench
		return ceilingCmd(ctx, args[1:])
	case "--version", "-version":
		args = []string{"version"}
	case "-h", "-help", "--help":
		return help(nil, stdout)
	}
	for _, c := range commandTable() {
		if c.top() == args[0] {
			return c.run(ctx, args[1:], os.Stdin, stdout, stderr)
		}
	}
	return usageError{fmt.Errorf("unknown command %q (latchkey help lists them)", args[0])}
}

type usageError struct{ error }

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	return versionFrom(bi, ok)
}

// versionFrom is the version: -X main.version, else the module version of
// go install module@version, else "devel-" and the VCS stamp's commit.
func versionFrom(bi *debug.BuildInfo, ok bool) string {
	if version != "" {
		return version
	}
	if ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		rev, _, dirty := vcsStamp(bi)
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			return "devel-" + rev + dirty
		}
	}
	return "devel"
}

// vcsStamp is what go build records of the git checkout (vcs.revision,
// vcs.time, vcs.modified); empty when it recorded none.
func vcsStamp(bi *debug.BuildInfo) (rev, vcsTime, dirty string) {
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	return rev, vcsTime, dirty
}

// unknownBuild says why a build names no commit, and what stamps one.
const unknownBuild = "unknown (no -X main.commit and no VCS stamp: build with make, or go build in a git " +
	"checkout without -buildvcs=false; go does not stamp a linked git worktree, golang/go#58218)"

// buildInfo is what the binary knows of its build: the commit (with
// "-dirty" for a modified tree) and the build date (-X main.buildDate, else
// the commit's time).
func buildInfo() (rev, date, goVersion string) {
	bi, ok := debug.ReadBuildInfo()
	return buildInfoFrom(bi, ok)
}

func buildInfoFrom(bi *debug.BuildInfo, ok bool) (rev, date, goVersion string) {
	rev, date, goVersion = commit, buildDate, "unknown"
	if ok {
		goVersion = bi.GoVersion
		vcsRev, vcsTime, dirty := vcsStamp(bi)
		if rev == "" && vcsRev != "" {
			rev = vcsRev + dirty
		}
		if date == "" {
			date = vcsTime
		}
	}
	if rev == "" {
		rev = unknownBuild
	}
	if date == "" {
		date = "unknown"
	}
	return rev, date, goVersion
}

// printVersion is `latchkey version`: the first line as before
// ("latchkey VERSION"), then the commit, build date and Go version.
func printVersion(w io.Writer) {
	commit, date, goVersion := buildInfo()
	fmt.Fprintf(w, "latchkey %s\ncommit: %s\nbuild date: %s\ngo: %s\n", versionString(), commit, date, goVersion)
}

// flags returns a FlagSet that prints nothing itself: errors become one
// line on stderr, -h prints the flags on stdout.
func flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return parseError(fs, err)
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))}
	}
	return nil
}

// parseError reports a failed fs.Parse: -h hands the flags to help (or,
// should a command be reached with it, prints them), anything else is a
// usage error.
func parseError(fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		if !describe(fs) {
			var b strings.Builder
			fmt.Fprintf(&b, "usage of latchkey %s:\n", fs.Name())
			writeFlags(&b, fs)
			fmt.Fprint(os.Stdout, b.String())
		}
		return err
	}
	return usageError{err}
}
