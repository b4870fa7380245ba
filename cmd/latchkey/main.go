// Command latchkey is the latchkey identity and access service.
//
//	latchkey serve [--config FILE] [--demo]
//	latchkey migrate [--config FILE]
//	latchkey person show|block|unblock|delete ...
//	latchkey client create|list|show|delete|rotate-secret ...
//	latchkey keys list|rotate [--config FILE]
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

const usage = `usage:
  latchkey serve [--config FILE] [--demo]   start the service
  latchkey migrate [--config FILE]          apply schema migrations and exit
  latchkey bench [--connections N] [--duration D] [--scenarios a,b] [--database DSN]
                                            load benchmark against the bare-HTTP ceiling
  latchkey person show --email ADDRESS [--config FILE] [--partition P]
                                            show a person (no credential material)
  latchkey person block|unblock|delete EMAIL_OR_ID [--config FILE] [--partition P]
                                            block (revoking every session and token),
                                            unblock or delete a person
  latchkey client list [--config FILE]      list the clients: the config file's and the stored ones
  latchkey client show CLIENT_ID [--config FILE]
                                            show a client (never a secret)
  latchkey client create [--file F|-] [--id ID] [--name N] [--auth-method M]
                         [--grant-types a,b] [--scopes a,b] [--redirect-uris a,b] [--config FILE]
                                            create a client (JSON as POST /api/v1/clients); prints a generated secret once
  latchkey client delete|rotate-secret CLIENT_ID [--config FILE]
                                            delete (revoking its tokens) or give a new secret
                                            (PostgreSQL: beside running servers; SQLite: server stopped, or the admin API)
  latchkey keys list [--config FILE]        list the signing keys (no key material)
  latchkey keys rotate [--config FILE]      add a signing key now; it signs after oidc.key_publish_ahead
                                            (PostgreSQL: beside running servers; SQLite: server stopped)
  latchkey backup [--config FILE] OUT       snapshot the SQLite database and its event log
                                            (OUT, OUT-events) while the server runs
  latchkey healthcheck [--config FILE]      exit 0 when the instance answers readiness 200
  latchkey completion bash|zsh|fish         print a shell completion script
  latchkey version                          print the version, commit and build date
`

// run executes one command and returns the process exit code. Every failure
// is reported as one line on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	// Every command that opens the store for writing (client, keys rotate,
	// person block…) applies an upgrade's migrations: it tells them on
	// stderr. serve logs them and migrate prints them instead.
	ctx = sqlstore.WithMigrationTrace(ctx, printedTrace(stderr))
	var err error
	switch args[0] {
	case "serve":
		err = serveCmd(ctx, args[1:], stdout, stderr)
	case "migrate":
		err = migrateCmd(ctx, args[1:], stdout)
	case "person":
		err = personCmd(ctx, args[1:], stdout)
	case "keys":
		err = keysCmd(ctx, args[1:], stdout)
	case "client":
		err = clientCmd(ctx, args[1:], os.Stdin, stdout)
	case "bench":
		err = benchCmd(ctx, args[1:], stdout)
	case "backup":
		err = backupCmd(ctx, args[1:], stdout)
	case "healthcheck":
		err = healthcheckCmd(ctx, args[1:])
	case "completion":
		err = completionCmd(args[1:], stdout)
	case "bench-ceiling": // a child of bench
		err = ceilingCmd(ctx, args[1:])
	case "version", "--version", "-version":
		printVersion(stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "latchkey: unknown command %q\n%s", args[0], usage)
		return 2
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

type usageError struct{ error }

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			return bi.Main.Version
		}
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			return "devel-" + rev + dirty
		}
	}
	return "devel"
}

// buildInfo is what the binary knows of its build: the commit (with
// "-dirty" for a modified tree) and the build date (-X main.buildDate, else
// the commit's time), "unknown" when the build recorded neither.
func buildInfo() (rev, date, goVersion string) {
	rev, date, goVersion = "unknown", buildDate, "unknown"
	if commit != "" {
		rev = commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if date == "" {
			date = "unknown"
		}
		return rev, date, goVersion
	}
	goVersion = bi.GoVersion
	var vcsTime, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if commit == "" {
				rev = s.Value
			}
		case "vcs.time":
			vcsTime = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if commit == "" && rev != "unknown" {
		rev += dirty
	}
	if date == "" {
		date = vcsTime
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

// parseError reports a failed fs.Parse: -h prints the flags on stdout,
// anything else is a usage error.
func parseError(fs *flag.FlagSet, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(os.Stdout, "usage of latchkey %s:\n", fs.Name())
		fs.SetOutput(os.Stdout)
		fs.PrintDefaults()
		return err
	}
	return usageError{err}
}
