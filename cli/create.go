package cli

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"text/template"
)

//go:embed scaffold
var scaffold embed.FS

// validAppName is what loom create accepts as the last element of NAME: a
// directory, app and Go module name. (The length is checked apart: a
// bounded repetition would compile to 63 copies of the class at start-up.)
var validAppName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// maxAppName bounds the length of an application name.
const maxAppName = 63

// create runs "loom create NAME [--yaml|--go]".
func create(env Env, args []string) error {
	fs := newFlagSet("create", "create [--yaml|--go] NAME\n\nScaffolds a new application in the new directory NAME: with --yaml (the default) an agent config (root_agent.yaml) to serve with \"loom web\"; with --go a Go module whose main.go calls cli.Main, with an agent, a function tool, an example test and an eval set. Both run offline at once. A Go module created inside a checkout of Loom (or given one with --loom) builds against that checkout.", env)
	asYAML := fs.Bool("yaml", false, "scaffold an agent config file (the default)")
	asGo := fs.Bool("go", false, "scaffold a Go module")
	module := fs.String("module", "", "Go module `path` (default: NAME's last element)")
	loomDir := fs.String("loom", "", "with --go: build against the Loom checkout in this `directory` (a replace directive in go.mod); default: the checkout NAME is created in, if any")
	positional, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 || (*asYAML && *asGo) {
		fmt.Fprintf(env.Stderr, "%s create: give one NAME, and at most one of --yaml and --go\n", env.Name)
		fs.Usage()
		return errUsage
	}
	dir := positional[0]
	name := filepath.Base(filepath.Clean(dir))
	if len(name) > maxAppName || !validAppName.MatchString(name) {
		return fmt.Errorf("create: %q is not a valid application name: use letters, digits, '_' and '-', starting with a letter", name)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("create: %s exists and is not empty", dir)
	}
	data := scaffoldData{Name: name, Agent: identifier(name) + "_agent", Module: *module, Version: moduleVersion()}
	if data.Module == "" {
		data.Module = name
	}
	kind := "yaml"
	if *asGo {
		kind = "go"
		if data.Replace, err = loomReplace(dir, *loomDir); err != nil {
			return fmt.Errorf("create: %w", err)
		}
	} else if *loomDir != "" {
		return errors.New("create: --loom is for a Go module (--go)")
	}
	files, err := writeScaffold(dir, kind, data)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Created %s:\n", dir)
	for _, f := range files {
		fmt.Fprintf(env.Stdout, "  %s\n", f)
	}
	if kind == "yaml" {
		fmt.Fprintf(env.Stdout, "\nRun it:\n  loom web %s        (the dev UI; edits to the file apply to the next message)\n  loom run %s        (a chat in the terminal)\n", dir, dir)
	} else {
		fmt.Fprintf(env.Stdout, "\nRun it:\n  cd %s\n", dir)
		if data.Version == "" && data.Replace == "" {
			// A development build of loom knows no released version to
			// require: the module needs a checkout (or a release).
			fmt.Fprintf(env.Stdout, "  go mod edit -require github.com/loomkit/loom@v0.0.0 -replace github.com/loomkit/loom=/path/to/loom\n"+
				"                    (a checkout of Loom; or %s create --go --loom DIR, or\n"+
				"                    go get github.com/loomkit/loom@latest for the latest release)\n", env.Name)
		}
		fmt.Fprintf(env.Stdout, "  go mod tidy\n  go test ./...     (the example and the eval set, offline)\n  go run . web      (the dev UI)\n")
	}
	fmt.Fprintln(env.Stdout, "\nWithout an API key (GOOGLE_API_KEY, OPENAI_API_KEY or ANTHROPIC_API_KEY) the app runs on an offline scripted model.")
	return nil
}

// scaffoldData fills the templates.
type scaffoldData struct {
	Name    string // the app (and directory) name
	Agent   string // the root agent's name, an identifier
	Module  string // the Go module path
	Version string // the loom module version to require, or ""
	Replace string // the directory of a Loom checkout for a replace directive, or ""
}

// loomModule is the module path of Loom.
const loomModule = "github.com/loomkit/loom"

// loomReplace returns the replace target for a Go module created in dir:
// the checkout of Loom given (flag), else the one dir lies in, if any, as
// a path relative to dir (quoted for go.mod when needed); "" for none.
func loomReplace(dir, flag string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	checkout := ""
	if flag != "" {
		if checkout, err = filepath.Abs(flag); err != nil {
			return "", err
		}
		if !isLoomCheckout(checkout) {
			return "", fmt.Errorf("--loom %s: no go.mod of module %s there", flag, loomModule)
		}
	} else {
		for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
			if isLoomCheckout(d) {
				checkout = d
				break
			}
			if filepath.Dir(d) == d {
				return "", nil
			}
		}
	}
	target := checkout
	if rel, err := filepath.Rel(abs, checkout); err == nil {
		target = filepath.ToSlash(rel)
		if !strings.HasPrefix(target, ".") {
			target = "./" + target
		}
	}
	if strings.ContainsAny(target, " \t\"'`") {
		target = strconv.Quote(target)
	}
	return target, nil
}

// loomModuleLine matches the module line of Loom's go.mod.
var loomModuleLine = regexp.MustCompile(`(?m)^module\s+"?github\.com/loomkit/loom"?\s*$`)

// isLoomCheckout reports whether dir holds the go.mod of Loom's module.
func isLoomCheckout(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && loomModuleLine.Match(b)
}

// writeScaffold writes the templates of scaffold/kind into dir and returns
// the files written, relative to dir.
func writeScaffold(dir, kind string, data scaffoldData) ([]string, error) {
	root := path.Join("scaffold", kind)
	var written []string
	err := fs.WalkDir(scaffold, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		text, err := scaffold.ReadFile(p)
		if err != nil {
			return err
		}
		tmpl, err := template.New(p).Parse(string(text))
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := tmpl.Execute(&b, data); err != nil {
			return err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".tmpl")
		if name == "evalset.json" {
			name = data.Name + ".evalset.json"
		}
		out := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
			return err
		}
		written = append(written, name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	if len(written) == 0 {
		return nil, errors.New("create: no templates")
	}
	return written, nil
}

// identifier turns an app name into an agent name: '-' becomes '_'.
func identifier(name string) string {
	return strings.ReplaceAll(name, "-", "_")
}

// moduleVersion is the version of the loom module this program was built
// with, for a scaffold's go.mod, or "" when unknown (a development build).
func moduleVersion() string {
	const loom = "github.com/loomkit/loom"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	v := ""
	if bi.Main.Path == loom {
		v = bi.Main.Version
	}
	for _, d := range bi.Deps {
		if d.Path == loom {
			v = d.Version
		}
	}
	if !strings.HasPrefix(v, "v") {
		return ""
	}
	return v
}
