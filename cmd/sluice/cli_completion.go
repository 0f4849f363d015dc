package main

import (
	"fmt"
	"sort"
	"strings"
)

// commandWords are the words each subcommand takes next, for shell completion.
var commandWords = map[string][]string{
	"topic":      {"create", "list", "describe", "delete", "alter-config", "add-partitions"},
	"group":      {"list", "describe", "seek", "delete"},
	"cluster":    {"info", "health"},
	"quorum":     {"describe"},
	"acl":        {"list", "create", "delete"},
	"user":       {"list", "set-scram", "delete-scram"},
	"completion": {"bash", "zsh"},
	"produce":    nil,
	"consume":    nil,
}

// runCompletion prints a completion script: `source <(sluice completion bash)`, or for zsh
// `source <(sluice completion zsh)` (bash completion through bashcompinit).
func runCompletion(c *cli, args []string) error {
	if len(args) != 1 || (args[0] != "bash" && args[0] != "zsh") {
		return usagef("completion wants bash or zsh")
	}
	var top []string
	for w := range commandWords {
		top = append(top, w)
	}
	sort.Strings(top)
	var cases strings.Builder
	for _, w := range top {
		if len(commandWords[w]) > 0 {
			fmt.Fprintf(&cases, "    %s) words=%q ;;\n", w, strings.Join(commandWords[w], " "))
		}
	}
	script := fmt.Sprintf(`# sluice shell completion
_sluice() {
  local cur=${COMP_WORDS[COMP_CWORD]} words=""
  if [ "$COMP_CWORD" -eq 1 ]; then
    words=%q
  elif [ "$COMP_CWORD" -eq 2 ]; then
    case "${COMP_WORDS[1]}" in
%s    esac
  fi
  case "$cur" in
    -*) words="--brokers --profile --timeout -o" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
`, strings.Join(append(top, "help"), " "), cases.String())
	if args[0] == "zsh" {
		script = "autoload -U +X bashcompinit && bashcompinit\n" + script
	}
	script += "complete -F _sluice sluice\n"
	_, err := fmt.Fprint(c.out, script)
	return err
}
