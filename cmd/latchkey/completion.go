package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/latchkey/latchkey/internal/client"
)

// A completion script is written from the command table and each
// command's own flag set (flagsOf): a flag added to a command is offered
// after that command, and only there.

// completionShells are the shells completion writes a script for.
var completionShells = map[string]func(w io.Writer, cs []completed){
	"bash": bashCompletion,
	"zsh":  zshCompletion,
	"fish": fishCompletion,
}

// completed is one command path with what may follow it.
type completed struct {
	top   string
	verbs []string // the alternatives of a subcommand line ("block", "unblock", "delete")
	flags []completedFlag
	args  []string // fixed words after it (completion: the shells)
}

type completedFlag struct {
	name, usage string
	file        bool // takes a file or folder
	values      []string
}

// completions lists every command line of the table with its flags.
func completions() []completed {
	var out []completed
	for _, c := range commandTable() {
		cc := completed{top: c.top(), verbs: c.verbs()}
		switch c.name {
		case "completion":
			cc.args = slices.Sorted(maps.Keys(completionShells))
		case "help":
			cc.args = tops(out) // the commands before it in the table: all but help
		}
		path := []string{c.top()}
		if cc.verbs != nil {
			path = append(path, cc.verbs[0])
		}
		if fs := flagsOf(c, path); fs != nil {
			fs.VisitAll(func(f *flag.Flag) {
				arg, usage := flag.UnquoteUsage(f)
				cf := completedFlag{name: f.Name, usage: usage, file: arg == "file" || arg == "folder"}
				if f.Name == "auth-method" {
					cf.values = client.AuthMethods
				}
				cc.flags = append(cc.flags, cf)
			})
		}
		out = append(out, cc)
	}
	return out
}

// tops are the top-level command names, once each.
func tops(cs []completed) []string {
	var out []string
	for _, c := range cs {
		if !slices.Contains(out, c.top) {
			out = append(out, c.top)
		}
	}
	return out
}

// verbsOf lists the subcommands of group top.
func verbsOf(cs []completed, top string) []string {
	var out []string
	for _, c := range cs {
		if c.top == top {
			out = append(out, c.verbs...)
		}
	}
	return out
}

func flagWords(c completed) string {
	var w []string
	for _, f := range c.flags {
		w = append(w, "--"+f.name)
	}
	return strings.Join(append(w, "--help"), " ")
}

func fileFlags(cs []completed) []string {
	var out []string
	for _, c := range cs {
		for _, f := range c.flags {
			if f.file && !slices.Contains(out, "--"+f.name) {
				out = append(out, "--"+f.name)
			}
		}
	}
	return out
}

func bashCompletion(w io.Writer, cs []completed) {
	fmt.Fprintf(w, `# latchkey completion for bash: source <(latchkey completion bash)
_latchkey() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} flags=""
  case $prev in
    %s) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --auth-method) COMPREPLY=($(compgen -W "%s" -- "$cur")); return ;;
  esac
  if [ "$COMP_CWORD" -eq 1 ]; then COMPREPLY=($(compgen -W "%s" -- "$cur")); return; fi
  case ${COMP_WORDS[1]} in
`, strings.Join(fileFlags(cs), "|"), strings.Join(client.AuthMethods, " "), strings.Join(tops(cs), " "))
	for _, top := range tops(cs) {
		if verbs := verbsOf(cs, top); verbs != nil {
			fmt.Fprintf(w, "    %s)\n      if [ \"$COMP_CWORD\" -eq 2 ]; then COMPREPLY=($(compgen -W \"%s help\" -- \"$cur\")); return; fi\n      case ${COMP_WORDS[2]} in\n",
				top, strings.Join(verbs, " "))
			for _, c := range cs {
				if c.top == top {
					fmt.Fprintf(w, "        %s) flags=\"%s\" ;;\n", strings.Join(c.verbs, "|"), flagWords(c))
				}
			}
			fmt.Fprint(w, "      esac ;;\n")
			continue
		}
		for _, c := range cs {
			if c.top == top && c.args != nil {
				fmt.Fprintf(w, "    %s) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n", top, strings.Join(c.args, " "))
			} else if c.top == top {
				fmt.Fprintf(w, "    %s) flags=\"%s\" ;;\n", top, flagWords(c))
			}
		}
	}
	fmt.Fprint(w, `  esac
  COMPREPLY=($(compgen -W "$flags" -- "$cur"))
}
complete -o default -F _latchkey latchkey
`)
}

func zshCompletion(w io.Writer, cs []completed) {
	fmt.Fprintf(w, `#compdef latchkey
# latchkey completion for zsh: latchkey completion zsh > "${fpath[1]}/_latchkey"
_latchkey() {
  local -a flags
  if (( CURRENT == 2 )); then compadd %s; return; fi
  case $words[CURRENT-1] in
    %s) _files; return ;;
    --auth-method) compadd %s; return ;;
  esac
  case $words[2] in
`, strings.Join(tops(cs), " "), strings.Join(fileFlags(cs), "|"), strings.Join(client.AuthMethods, " "))
	for _, top := range tops(cs) {
		if verbs := verbsOf(cs, top); verbs != nil {
			fmt.Fprintf(w, "    %s)\n      if (( CURRENT == 3 )); then compadd %s help; return; fi\n      case $words[3] in\n",
				top, strings.Join(verbs, " "))
			for _, c := range cs {
				if c.top == top {
					fmt.Fprintf(w, "        %s) flags=(%s) ;;\n", strings.Join(c.verbs, "|"), flagWords(c))
				}
			}
			fmt.Fprint(w, "      esac ;;\n")
			continue
		}
		for _, c := range cs {
			if c.top == top && c.args != nil {
				fmt.Fprintf(w, "    %s) compadd %s; return ;;\n", top, strings.Join(c.args, " "))
			} else if c.top == top {
				fmt.Fprintf(w, "    %s) flags=(%s) ;;\n", top, flagWords(c))
			}
		}
	}
	fmt.Fprint(w, `  esac
  compadd -- $flags
}
compdef _latchkey latchkey
`)
}

// fishQuote makes s one single-quoted fish word.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func fishCompletion(w io.Writer, cs []completed) {
	fmt.Fprintln(w, "# latchkey completion for fish: latchkey completion fish > ~/.config/fish/completions/latchkey.fish")
	fmt.Fprintf(w, "complete -c latchkey -f -n __fish_use_subcommand -a %s\n", fishQuote(strings.Join(tops(cs), " ")))
	for _, top := range tops(cs) {
		if verbs := verbsOf(cs, top); verbs != nil {
			fmt.Fprintf(w, "complete -c latchkey -f -n %s -a %s\n",
				fishQuote("__fish_seen_subcommand_from "+top+"; and not __fish_seen_subcommand_from "+strings.Join(verbs, " ")),
				fishQuote(strings.Join(verbs, " ")+" help"))
		}
	}
	for _, c := range cs {
		cond := "__fish_seen_subcommand_from " + c.top
		if c.verbs != nil {
			cond += "; and __fish_seen_subcommand_from " + strings.Join(c.verbs, " ")
		}
		if c.args != nil {
			fmt.Fprintf(w, "complete -c latchkey -f -n %s -a %s\n", fishQuote(cond), fishQuote(strings.Join(c.args, " ")))
		}
		for _, f := range c.flags {
			line := fmt.Sprintf("complete -c latchkey -n %s -l %s -d %s", fishQuote(cond), f.name, fishQuote(f.usage))
			switch {
			case f.file:
				line += " -r -F"
			case f.values != nil:
				line += " -r -f -a " + fishQuote(strings.Join(f.values, " "))
			}
			fmt.Fprintln(w, line)
		}
	}
}

// completionCmd prints the completion script of a shell.
func completionCmd(args []string, stdout io.Writer) error {
	if len(args) != 1 || completionShells[args[0]] == nil {
		return usageError{errors.New("completion: want one shell: bash, zsh or fish")}
	}
	completionShells[args[0]](stdout, completions())
	return nil
}
