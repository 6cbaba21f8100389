// Package skilltool gives an LLM agent Agent Skills (agentskills.io): folders
// holding a SKILL.md (YAML frontmatter with the skill's name and
// description, then markdown instructions) and optional references/,
// assets/ and scripts/ folders. The agent sees every skill's name and
// description, loads a skill's instructions when a request needs it,
// unloads it when it is done, and runs its scripts only through a
// configured code executor.
//
// # Discovery
//
// [Discover] reads every skill of a file system: its root when that holds a
// SKILL.md, otherwise each directory below the root that does. Any fs.FS
// serves: os.DirFS for a directory ([DiscoverDir]), an embed.FS for skills
// compiled into the program.
//
// # The toolset
//
// A [Toolset] has ADK's four tools, with ADK's arguments, results and error
// codes, and ADK's system instruction listing the skills, so that a model
// sees what it sees under ADK: list_skills, load_skill, load_skill_resource
// (a file of references/, assets/ or scripts/) and execute_skill_script;
// and a fifth, unload_skill.
//
// # Lifecycle and cap
//
// Loading a skill makes it active in the session (the state key
// [ActiveStateKey], oldest first) and answers the model with the skill's
// instructions, as ADK does. Unloading it, or loading more skills than
// Config.MaxActive (the oldest active skill is unloaded then), takes the
// instructions out of the model's context: in every later request, the
// load_skill responses of skills no longer active, and any but the latest
// of an active one, read {"skill_name": ..., "status": "unloaded"}. The
// session log keeps what was sent.
package skilltool

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// FileName is the name of a skill's main file.
const FileName = "SKILL.md"

// Bounds on what a skill may hold.
const (
	MaxSkillFileBytes = 1 << 20 // SKILL.md
	MaxResourceBytes  = 1 << 20 // one file of references/, assets/ or scripts/
)

// Skill is one skill: its frontmatter, its instructions and its folder.
// It is immutable and safe for concurrent use.
type Skill struct {
	// Name is the skill's name: lowercase letters, digits and hyphens,
	// at most 64 characters, the name of its folder when it has one.
	Name string
	// Description says what the skill does and when to use it.
	Description string
	// License, Compatibility and AllowedTools are the optional
	// frontmatter fields of those names (allowed-tools for the last).
	License, Compatibility, AllowedTools string
	// Metadata holds the frontmatter's metadata map.
	Metadata map[string]any
	// Instructions is the markdown body of SKILL.md.
	Instructions string

	extra map[string]any // other frontmatter fields
	fsys  fs.FS          // the skill's folder; nil for an inline skill
}

var nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Parse reads a SKILL.md document: frontmatter between "---" lines, then
// the instructions. The skill has no folder, hence no resources or
// scripts; [Load] reads one with its folder.
func Parse(doc []byte) (*Skill, error) {
	doc = bytes.TrimPrefix(doc, []byte("\ufeff"))
	doc = bytes.ReplaceAll(doc, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(doc, []byte("---\n"))
	if !ok {
		return nil, errors.New("skilltool: SKILL.md must start with a --- line opening its YAML frontmatter")
	}
	var front, body []byte
	if i := bytes.Index(rest, []byte("\n---")); i >= 0 && (i+4 == len(rest) || rest[i+4] == '\n') {
		front, body = rest[:i], rest[min(i+5, len(rest)):]
	} else if bytes.HasPrefix(rest, []byte("---")) && (len(rest) == 3 || rest[3] == '\n') {
		body = rest[min(4, len(rest)):]
	} else {
		return nil, errors.New("skilltool: SKILL.md has no --- line closing its frontmatter")
	}
	var fm map[string]any
	if err := yaml.Unmarshal(front, &fm); err != nil {
		return nil, fmt.Errorf("skilltool: SKILL.md frontmatter: %w", err)
	}
	s := &Skill{Instructions: strings.TrimSpace(string(body)), extra: map[string]any{}}
	str := func(key string) (string, error) {
		v, ok := fm[key]
		if !ok || v == nil {
			return "", nil
		}
		t, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("skilltool: frontmatter field %s is %T, want text", key, v)
		}
		return t, nil
	}
	var err error
	for key, dst := range map[string]*string{"name": &s.Name, "description": &s.Description, "license": &s.License, "compatibility": &s.Compatibility} {
		if *dst, err = str(key); err != nil {
			return nil, err
		}
	}
	if s.AllowedTools, err = str("allowed-tools"); err != nil {
		return nil, err
	}
	if s.AllowedTools == "" {
		if s.AllowedTools, err = str("allowed_tools"); err != nil {
			return nil, err
		}
	}
	if m, ok := fm["metadata"]; ok && m != nil {
		if s.Metadata, ok = m.(map[string]any); !ok {
			return nil, fmt.Errorf("skilltool: frontmatter field metadata is %T, want a map", m)
		}
	}
	for k, v := range fm {
		switch k {
		case "name", "description", "license", "compatibility", "allowed-tools", "allowed_tools", "metadata":
		default:
			s.extra[k] = v
		}
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return s, nil
}

// check validates the frontmatter as the Agent Skills format does.
func (s *Skill) check() error {
	switch {
	case s.Name == "":
		return errors.New("skilltool: the frontmatter has no name")
	case utf8.RuneCountInString(s.Name) > 64:
		return fmt.Errorf("skilltool: skill name %q is longer than 64 characters", s.Name)
	case !nameRE.MatchString(s.Name):
		return fmt.Errorf("skilltool: skill name %q must be lowercase letters, digits and single hyphens, not at either end", s.Name)
	case s.Description == "":
		return fmt.Errorf("skilltool: skill %s has no description", s.Name)
	case utf8.RuneCountInString(s.Description) > 1024:
		return fmt.Errorf("skilltool: the description of skill %s is longer than 1024 characters", s.Name)
	case utf8.RuneCountInString(s.Compatibility) > 500:
		return fmt.Errorf("skilltool: the compatibility of skill %s is longer than 500 characters", s.Name)
	}
	return nil
}

// Load reads the skill in the folder dir of fsys ("." for its root): its
// SKILL.md, whose name must be the folder's (but for the root), and the
// files below, read when the model asks for them.
func Load(fsys fs.FS, dir string) (*Skill, error) {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("skilltool: %s: %w", dir, err)
	}
	doc, err := readBounded(sub, FileName, MaxSkillFileBytes)
	if err != nil {
		return nil, fmt.Errorf("skilltool: %s: %w", path.Join(dir, FileName), err)
	}
	s, err := Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path.Join(dir, FileName))
	}
	if dir != "." && path.Base(dir) != s.Name {
		return nil, fmt.Errorf("skilltool: skill %s is in the folder %s: a skill's folder has its name", s.Name, dir)
	}
	s.fsys = sub
	return s, nil
}

// Discover returns the skills of fsys, sorted by name: its root's, when the
// root holds a SKILL.md, otherwise those of every directory below the root
// that holds one (a skill's own subdirectories are not searched).
func Discover(fsys fs.FS) ([]*Skill, error) {
	if _, err := fs.Stat(fsys, FileName); err == nil {
		s, err := Load(fsys, ".")
		if err != nil {
			return nil, err
		}
		return []*Skill{s}, nil
	}
	var out []*Skill
	seen := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if _, err := fs.Stat(fsys, path.Join(p, FileName)); err != nil {
			return nil
		}
		s, err := Load(fsys, p)
		if err != nil {
			return err
		}
		if other, dup := seen[s.Name]; dup {
			return fmt.Errorf("skilltool: two skills named %s, in %s and %s", s.Name, other, p)
		}
		seen[s.Name] = p
		out = append(out, s)
		return fs.SkipDir
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *Skill) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DiscoverDir returns the skills of the directory dir (see Discover). The
// files are read through an os.Root: a symbolic link out of dir is not
// followed.
func DiscoverDir(dir string) ([]*Skill, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("skilltool: %w", err)
	}
	return Discover(root.FS())
}

// Resource returns the file at p, a path below references/, assets/ or
// scripts/ of the skill's folder.
func (s *Skill) Resource(p string) ([]byte, error) {
	if !fs.ValidPath(p) || !(strings.HasPrefix(p, "references/") || strings.HasPrefix(p, "assets/") || strings.HasPrefix(p, "scripts/")) {
		return nil, fmt.Errorf("skilltool: %q is not a path below references/, assets/ or scripts/", p)
	}
	if s.fsys == nil {
		return nil, fs.ErrNotExist
	}
	return readBounded(s.fsys, p, MaxResourceBytes)
}

// frontmatter is the skill's frontmatter as ADK's load_skill returns it.
func (s *Skill) frontmatter() map[string]any {
	opt := func(v string) any {
		if v == "" {
			return nil
		}
		return v
	}
	m := map[string]any{}
	for k, v := range s.extra {
		m[k] = v
	}
	md := s.Metadata
	if md == nil {
		md = map[string]any{}
	}
	m["name"], m["description"], m["metadata"] = s.Name, s.Description, md
	m["license"], m["compatibility"], m["allowed_tools"] = opt(s.License), opt(s.Compatibility), opt(s.AllowedTools)
	return m
}

// readBounded reads a regular file of at most max bytes.
func readBounded(fsys fs.FS, name string, max int64) ([]byte, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, max)
	}
	return fs.ReadFile(fsys, name)
}
