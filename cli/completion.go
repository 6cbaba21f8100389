package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// completeCommand is the hidden command the completion scripts call: its
// arguments are the words of the command line after the program's name,
// the last one the word being completed; it prints the candidates, one a
// line. No candidate lets the shell complete file names.
const completeCommand = "__complete"

// commands are the subcommands offered for completion.
var commands = []string{"web", "api", "run", "eval", "create", "worker", "conformance", "completion", "help", "version"}

// completion runs "loom completion SHELL": it prints the completion script
// of bash, zsh or fish.
func completion(env Env, args []string, p Program) error {
	fs := newFlagSet("completion", "completion bash|zsh|fish\n\nPrints a completion script for the shell. Load it with\n  bash: source <("+env.Name+" completion bash)   (in ~/.bashrc)\n  zsh:  source <("+env.Name+" completion zsh)    (in ~/.zshrc, after compinit)\n  fish: "+env.Name+" completion fish | source     (in ~/.config/fish/config.fish)", env)
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		fmt.Fprintf(env.Stderr, "%s completion: name one shell: bash, zsh or fish\n", env.Name)
		fs.Usage()
		return errUsage
	}
	name := env.Name
	fn := "_" + regexp.MustCompile(`[^A-Za-z0-9_]`).ReplaceAllString(name, "_") + "_complete"
	switch positional[0] {
	case "bash":
		fmt.Fprintf(env.Stdout, `# bash completion for %[1]s
%[2]s() {
	local IFS=$'\n'
	COMPREPLY=($("${COMP_WORDS[0]}" %[3]s "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F %[2]s %[1]s
`, name, fn, completeCommand)
	case "zsh":
		fmt.Fprintf(env.Stdout, `#compdef %[1]s
# zsh completion for %[1]s
%[2]s() {
	local -a candidates
	candidates=("${(@f)$("${words[1]}" %[3]s "${(@)words[2,CURRENT]}" 2>/dev/null)}")
	if (( ${#candidates} )) && [[ -n "${candidates[1]}" ]]; then
		compadd -a candidates
	else
		_files
	fi
}
compdef %[2]s %[1]s
`, name, fn, completeCommand)
	case "fish":
		fmt.Fprintf(env.Stdout, `# fish completion for %[1]s
complete -c %[1]s -a '(%[1]s %[2]s (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`, name, completeCommand)
	default:
		fmt.Fprintf(env.Stderr, "%s completion: unknown shell %q: bash, zsh or fish\n", env.Name, positional[0])
		return errUsage
	}
	return nil
}

// complete prints the candidates for the last of words (see
// completeCommand): subcommands, a command's flags, the applications of
// the program, or nothing (file names).
func complete(env Env, words []string, p Program) {
	if len(words) == 0 {
		words = []string{""}
	}
	cur := words[len(words)-1]
	say := func(candidates ...string) {
		for _, c := range candidates {
			if strings.HasPrefix(c, cur) {
				fmt.Fprintln(env.Stdout, c)
			}
		}
	}
	if len(words) == 1 {
		say(commands...)
		return
	}
	cmd := words[0]
	switch cmd {
	case "help":
		if len(words) == 2 {
			say(commands...)
		}
		return
	case "completion":
		say("bash", "zsh", "fish")
		return
	case "version":
		return
	}
	path := []string{cmd}
	if cmd == "conformance" {
		if len(words) == 2 {
			say("test", "record")
			return
		}
		path = append(path, words[1])
	}
	flags := commandFlags(p, path)
	if prev := words[len(words)-2]; strings.HasPrefix(prev, "-") && !strings.Contains(prev, "=") {
		if takesValue, ok := flags[strings.TrimLeft(prev, "-")]; ok && takesValue {
			return // the flag's value: file names, or anything
		}
	}
	if strings.HasPrefix(cur, "-") {
		names := make([]string, 0, len(flags))
		for name := range flags {
			names = append(names, "--"+name)
		}
		sort.Strings(names)
		say(names...)
		return
	}
	if (cmd == "run" || cmd == "eval") && positionals(words[1:len(words)-1], flags) == 0 {
		// The application comes first; eval set files follow.
		apps := make([]string, len(p.Apps))
		for i, a := range p.Apps {
			apps[i] = a.Name
		}
		say(apps...)
	}
}

// flagLine matches a flag's first line in the output of PrintDefaults:
// its name, then the name of its value unless it is a boolean flag.
var flagLine = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9_-]*)( \S+)?`)

// commandFlags returns the flags of the command path (its -h output read
// back), each with whether it takes a value.
func commandFlags(p Program, path []string) map[string]bool {
	var out strings.Builder
	p.Run(context.Background(), append(path, "-h"), Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard, Getenv: func(string) string { return "" }})
	flags := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		if m := flagLine.FindStringSubmatch(sc.Text()); m != nil {
			flags[m[1]] = m[2] != ""
		}
	}
	return flags
}

// positionals counts the words that are neither flags nor flag values.
func positionals(words []string, flags map[string]bool) int {
	n := 0
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--":
			return n + len(words) - i - 1
		case strings.HasPrefix(w, "-") && len(w) > 1:
			if !strings.Contains(w, "=") && flags[strings.TrimLeft(w, "-")] {
				i++ // its value
			}
		default:
			n++
		}
	}
	return n
}
