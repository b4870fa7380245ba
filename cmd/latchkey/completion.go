package main

import (
	"errors"
	"fmt"
	"io"
)

// commands and their flags, for shell completion.
const (
	completionCommands = "serve migrate backup bench person client keys healthcheck version completion help"
	completionFlags    = "--config --demo --email --partition --file --id --name --auth-method --grant-types --scopes --redirect-uris"
)

var completions = map[string]string{
	"bash": `# latchkey completion for bash: source <(latchkey completion bash)
_latchkey() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  if [ "$prev" = "--config" ]; then COMPREPLY=($(compgen -f -- "$cur")); return; fi
  if [ "$COMP_CWORD" -eq 1 ]; then COMPREPLY=($(compgen -W "` + completionCommands + `" -- "$cur")); return; fi
  case ${COMP_WORDS[1]} in
    person) [ "$COMP_CWORD" -eq 2 ] && { COMPREPLY=($(compgen -W "show block unblock delete" -- "$cur")); return; } ;;
    client) [ "$COMP_CWORD" -eq 2 ] && { COMPREPLY=($(compgen -W "create list show delete rotate-secret" -- "$cur")); return; } ;;
    keys) [ "$COMP_CWORD" -eq 2 ] && { COMPREPLY=($(compgen -W "list rotate" -- "$cur")); return; } ;;
    completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return ;;
  esac
  COMPREPLY=($(compgen -W "` + completionFlags + `" -- "$cur"))
}
complete -o default -F _latchkey latchkey
`,
	"zsh": `#compdef latchkey
# latchkey completion for zsh: latchkey completion zsh > "${fpath[1]}/_latchkey"
_latchkey() {
  if (( CURRENT == 2 )); then compadd ` + completionCommands + `; return; fi
  case $words[2] in
    person) (( CURRENT == 3 )) && { compadd show block unblock delete; return; } ;;
    client) (( CURRENT == 3 )) && { compadd create list show delete rotate-secret; return; } ;;
    keys) (( CURRENT == 3 )) && { compadd list rotate; return; } ;;
    completion) compadd bash zsh fish; return ;;
  esac
  [[ $words[CURRENT-1] == --config ]] && { _files; return; }
  compadd -- ` + completionFlags + `
}
compdef _latchkey latchkey
`,
	"fish": `# latchkey completion for fish: latchkey completion fish > ~/.config/fish/completions/latchkey.fish
complete -c latchkey -f -n __fish_use_subcommand -a "` + completionCommands + `"
complete -c latchkey -f -n "__fish_seen_subcommand_from person" -a "show block unblock delete"
complete -c latchkey -f -n "__fish_seen_subcommand_from client" -a "create list show delete rotate-secret"
complete -c latchkey -f -n "__fish_seen_subcommand_from keys" -a "list rotate"
complete -c latchkey -f -n "__fish_seen_subcommand_from completion" -a "bash zsh fish"
complete -c latchkey -l config -r -F
complete -c latchkey -l demo
complete -c latchkey -l email -r
complete -c latchkey -l partition -r
complete -c latchkey -l file -r -F
complete -c latchkey -l id -r
complete -c latchkey -l name -r
complete -c latchkey -l auth-method -r -a "client_secret_basic client_secret_post private_key_jwt none"
complete -c latchkey -l grant-types -r
complete -c latchkey -l scopes -r
complete -c latchkey -l redirect-uris -r
`,
}

// completionCmd prints the completion script of a shell.
func completionCmd(args []string, stdout io.Writer) error {
	if len(args) != 1 || completions[args[0]] == "" {
		return usageError{errors.New("completion: want one shell: bash, zsh or fish")}
	}
	_, err := fmt.Fprint(stdout, completions[args[0]])
	return err
}
