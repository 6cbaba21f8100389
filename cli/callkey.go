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
// the file does not exist. Of two processes making it at once, one writes
// it and both read it.
func makeCallKey(file string) (*event.CallKey, error) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return readCallKey(file)
	case err != nil:
		return nil, fmt.Errorf("call key: %w", err)
	}
	key := make([]byte, event.MinCallKeyLen)
	rand.Read(key)
	_, err = f.Write(key)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file)
		return nil, fmt.Errorf("call key: %w", err)
	}
	return event.NewCallKey(key)
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
