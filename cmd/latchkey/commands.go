package main

// The command table: usage, --help and shell completion all come from it
// and from the commands' own flag sets, so there is no second list to keep.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"

	"github.com/latchkey/latchkey/internal/config"
)

// runner runs a top-level command with the arguments after its name.
type runner func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

// cliCommand is one line of the usage: a command, or a subcommand of a group
// ("keys rotate"; alternatives share a line: "person block|unblock|delete").
type cliCommand struct {
	name     string
	synopsis string // the arguments; a "--" in it means the command has flags
	about    string // what it does; "\n" starts another line
	run      runner // the top-level command's function, for every line of a group alike
}

// commandTable is a function, not a variable: help and completion read it,
// and the table names them.
func commandTable() []cliCommand {
	serve := func(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return serveCmd(ctx, args, stdout, stderr)
	}
	person := func(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
		return personCmd(ctx, args, stdout)
	}
	client := func(ctx context.Context, args []string, stdin io.Reader, stdout, _ io.Writer) error {
		return clientCmd(ctx, args, stdin, stdout)
	}
	keys := func(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
		return keysCmd(ctx, args, stdout)
	}
	return []cliCommand{
		{"serve", "[--config FILE] [--demo]", "start the service (serve --help lists the LATCHKEY_* variables)", serve},
		{"migrate", "[--config FILE]", "apply schema migrations and exit",
			func(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
				return migrateCmd(ctx, args, stdout)
			}},
		{"bench", "[--connections N] [--duration D] [--scenarios a,b] [--database DSN]",
			"load benchmark against the bare-HTTP ceiling",
			func(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
				return benchCmd(ctx, args, stdout)
			}},
		{"person show", "--email ADDRESS [--config FILE] [--partition P]", "show a person (no credential material)", person},
		{"person block|unblock|delete", "EMAIL_OR_ID [--config FILE] [--partition P]",
			"block (revoking every session and token),\nunblock or delete a person", person},
		{"client list", "[--config FILE]", "list the clients: the config file's and the stored ones", client},
		{"client show", "CLIENT_ID [--config FILE]", "show a client (never a secret)", client},
		{"client create", "[--file F|-] [--id ID] [--name N] [--auth-method M]\n[--grant-types a,b] [--scopes a,b] [--redirect-uris a,b] [--config FILE]",
			"create a client (JSON as POST /api/v1/clients); prints a generated secret once", client},
		{"client delete|rotate-secret", "CLIENT_ID [--config FILE]",
			"delete (revoking its tokens) or give a new secret\n(PostgreSQL: beside running servers; SQLite: server stopped, or the admin API)", client},
		{"keys list", "[--config FILE]", "list the signing keys (no key material)", keys},
		{"keys rotate", "[--now] [--config FILE]",
			"add a signing key now; it signs after oidc.key_publish_ahead,\nor at once with --now (a compromised key: docs/OIDC.md)\n(PostgreSQL: beside running servers; SQLite: server stopped)", keys},
		{"keys retire", "KID [--config FILE]",
			"take a key out of the JWKS at once; refused for the key that signs\n(rotate --now first; PostgreSQL: beside running servers; SQLite: server stopped)", keys},
		{"backup", "[--config FILE] OUT", "snapshot the SQLite database and its event log\n(OUT, OUT-events) while the server runs",
			func(ctx context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
				return backupCmd(ctx, args, stdout)
			}},
		{"healthcheck", "[--config FILE]", "exit 0 when the instance answers readiness 200",
			func(ctx context.Context, args []string, _ io.Reader, _, _ io.Writer) error {
				return healthcheckCmd(ctx, args)
			}},
		{"completion", "bash|zsh|fish", "print a shell completion script",
			func(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
				return completionCmd(args, stdout)
			}},
		{"version", "", "print the version, commit and build date",
			func(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
				if len(args) > 0 {
					return usageError{fmt.Errorf("version: unexpected argument %q", args[0])}
				}
				printVersion(stdout)
				return nil
			}},
		{"help", "[COMMAND [SUBCOMMAND]]", "show a command's usage and flags (as COMMAND --help does)",
			func(_ context.Context, args []string, _ io.Reader, stdout, _ io.Writer) error {
				return help(args, stdout)
			}},
	}
}

// top is the command's first word; verbs are its subcommands ("block",
// "unblock", "delete"), none for a top-level command.
func (c cliCommand) top() string { t, _, _ := strings.Cut(c.name, " "); return t }
func (c cliCommand) verbs() []string {
	_, v, ok := strings.Cut(c.name, " ")
	if !ok {
		return nil
	}
	return strings.Split(v, "|")
}

// isGroup: the command has subcommands (person, client, keys).
func isGroup(name string) bool {
	return slices.ContainsFunc(commandTable(), func(c cliCommand) bool { return c.top() == name && c.verbs() != nil })
}

// lookup finds the table lines of path: a group's lines for ["keys"], one
// line for ["keys", "rotate"] or ["serve"]; none for an unknown path.
func lookup(path []string) []cliCommand {
	var out []cliCommand
	for _, c := range commandTable() {
		if len(path) == 0 || c.top() != path[0] {
			continue
		}
		if len(path) == 1 || slices.Contains(c.verbs(), path[1]) {
			out = append(out, c)
		}
	}
	return out
}

// usageText is the whole usage, as "latchkey help" prints it.
func usageText() string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commandTable() {
		writeUsageLine(&b, c)
	}
	b.WriteString("\nlatchkey COMMAND --help (or latchkey help COMMAND) shows a command's flags.\n")
	return b.String()
}

// writeUsageLine writes c as "  latchkey NAME SYNOPSIS   ABOUT", the about
// in a column of its own.
func writeUsageLine(b *strings.Builder, c cliCommand) {
	const col = 44
	lines := strings.Split(strings.TrimSpace("latchkey "+c.name+" "+c.synopsis), "\n")
	for i, l := range lines {
		if i > 0 {
			l = strings.Repeat(" ", len("latchkey "+c.name)+1) + l
		}
		lines[i] = "  " + l
	}
	about := strings.Split(c.about, "\n")
	last := lines[len(lines)-1]
	if len(lines) == 1 && len(last) < col-1 {
		lines[0] = last + strings.Repeat(" ", col-len(last)) + about[0]
		about = about[1:]
	}
	for _, l := range lines {
		b.WriteString(l + "\n")
	}
	for _, a := range about {
		b.WriteString(strings.Repeat(" ", col) + a + "\n")
	}
}

// isHelp: the argument asks for help.
func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// helpRequest reports the command path that args ask the help of, if they
// do: "latchkey keys --help", "latchkey keys help", "latchkey keys rotate -h".
func helpRequest(args []string) ([]string, bool) {
	if len(args) < 2 {
		return nil, false
	}
	if isGroup(args[0]) && (isHelp(args[1]) || args[1] == "help") {
		return args[:1], true
	}
	path := args[:1]
	if isGroup(args[0]) {
		path = args[:2]
	}
	if slices.ContainsFunc(args[len(path):], isHelp) {
		return path, true
	}
	return nil, false
}

// help prints the help of path: the usage with no path, a group's lines,
// or one command's line, about and flags (serve: also its variables).
func help(path []string, stdout io.Writer) error {
	if len(path) == 0 {
		_, err := fmt.Fprint(stdout, usageText())
		return err
	}
	cmds := lookup(path)
	if len(cmds) == 0 || len(path) > 2 || len(path) == 2 && !isGroup(path[0]) {
		return usageError{fmt.Errorf("help: unknown command %q (latchkey help lists them)", strings.Join(path, " "))}
	}
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range cmds {
		writeUsageLine(&b, c)
	}
	if len(cmds) > 1 || isGroup(path[0]) && len(path) == 1 {
		fmt.Fprintf(&b, "\nlatchkey %s SUBCOMMAND --help shows a subcommand's flags.\n", path[0])
		_, err := fmt.Fprint(stdout, b.String())
		return err
	}
	if fs := flagsOf(cmds[0], path); fs != nil {
		b.WriteString("\nflags:\n")
		writeFlags(&b, fs)
	}
	if path[0] == "serve" {
		b.WriteString("\nenvironment: each LATCHKEY_* variable overrides its key of the config file\n" +
			"(a misspelt one is warned about at start):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  VARIABLE\tDEFAULT")
		for _, v := range config.Variables() {
			d := v.Default
			if d == "" {
				d = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\n", v.Name, d)
		}
		tw.Flush()
	}
	_, err := fmt.Fprint(stdout, b.String())
	return err
}

// writeFlags lists fs's flags as "  --name VALUE   usage".
func writeFlags(b *strings.Builder, fs *flag.FlagSet) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		arg := "--" + f.Name
		if name != "" {
			arg += " " + strings.ToUpper(name)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			usage += " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", arg, usage)
	})
	tw.Flush()
}

// describing collects the flag set of a command run with --help: parse
// hands it over instead of printing (parseError), and the command stops
// there, before it does anything.
// Another command parsing at that moment in the same process (tests
// only) would be described instead: help runs alone in a real process.
var describing struct {
	sync.Mutex
	on atomic.Bool
	fs *flag.FlagSet
}

// flagsOf runs c with --help and returns the flag set it parsed, nil for a
// command without flags.
func flagsOf(c cliCommand, path []string) *flag.FlagSet {
	if !strings.Contains(c.synopsis, "--") {
		return nil
	}
	args := []string{"--help"}
	if v := c.verbs(); v != nil {
		verb := v[0]
		if len(path) == 2 {
			verb = path[1]
		}
		args = []string{verb, "--help"}
	}
	describing.Lock()
	defer describing.Unlock()
	describing.fs = nil
	describing.on.Store(true)
	defer describing.on.Store(false)
	err := c.run(context.Background(), args, strings.NewReader(""), io.Discard, io.Discard)
	if !errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return describing.fs
}

// describe hands fs to flagsOf when it is collecting; false otherwise.
func describe(fs *flag.FlagSet) bool {
	if !describing.on.Load() {
		return false
	}
	describing.fs = fs
	return true
}
