package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/loomkit/loom/event"
)

// CallKeyFile is the name of the file, beside a SQLite session database,
// in which "loom api" keeps the key that authenticates stored function
// calls when --call-key-file names none.
const CallKeyFile = "call.key"

// callKey returns the key that authenticates the stored function calls of
// the command's runners (runner.Config.CallKey), or nil. --call-key-file
// names a file holding at least event.MinCallKeyLen bytes. Without it,
// "loom api" (auto) authenticates calls all the same: with a key kept in
// CallKeyFile beside a SQLite session database (made, readable by the
// owner only, on first use), or, for in-memory sessions, a key of the
// process. Other storage without --call-key-file stores calls
// unauthenticated, and auto reports it on stderr as note.
func callKey(o *options, auto bool, note func(string)) (*event.CallKey, error) {
	if o.callKeyFile != "" {
		return readCallKey(o.callKeyFile)
	}
	if !auto {
		return nil, nil
	}
	if strings.HasPrefix(o.sessions, "memory:") {
		key := make([]byte, event.MinCallKeyLen)
		rand.Read(key)
		return event.NewCallKey(key)
	}
	if file, ok := sqliteFile(o.sessions); ok {
		if err := makeParentDir(o.sessions); err != nil {
			return nil, fmt.Errorf("call key: %w", err)
		}
		return makeCallKey(filepath.Join(filepath.Dir(file), CallKeyFile))
	}
	note("stored function calls are not authenticated: --call-key-file names no key")
	return nil, nil
}

// readCallKey reads the key of file.
func readCallKey(file string) (*event.CallKey, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("call key: %w", err)
	}
	k, err := event.NewCallKey(b)
	if err != nil {
		return nil, fmt.Errorf("call key %s: %w", file, err)
	}
	return k, nil
}

// makeCallKey reads the key of file, first writing a random one there if
// the file does not exist.
func makeCallKey(file string) (*event.CallKey, error) {
	key := make([]byte, event.MinCallKeyLen)
	rand.Read(key)
	if _, err := keepSecret(file, key); err != nil {
		return nil, fmt.Errorf("call key: %w", err)
	}
	return readCallKey(file)
}

// keepSecret writes secret to file, readable by its owner only, unless the
// file exists; it reports whether it wrote it. The file appears whole: of
// two processes keeping a secret there at once, one writes it and the
// other finds it complete.
func keepSecret(file string, secret []byte) (bool, error) {
	if _, err := os.Stat(file); err == nil {
		return false, nil
	}
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return false, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(secret) // CreateTemp makes the file 0600
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	switch err := os.Link(f.Name(), file); {
	case errors.Is(err, fs.ErrExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// sqliteFile returns the database file of a sqlite:// session URL.
func sqliteFile(u string) (string, bool) {
	rest, ok := strings.CutPrefix(u, "sqlite:")
	if !ok {
		return "", false
	}
	file, _, _ := strings.Cut(strings.TrimPrefix(rest, "//"), "?")
	if file == "" || file == ":memory:" {
		return "", false
	}
	return file, true
}
