package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/loomkit/loom/agent/agentconfig"
)

// maxFingerprintFiles bounds the YAML files a file app's fingerprint
// covers.
const maxFingerprintFiles = 1000

// racyWindow is how old a file's last change must be, at a look, for its
// metadata to be trusted at the next look. A write in the same timestamp
// tick as a look can leave the size and times the look saw unchanged, so
// a file changed within this window (about the coarsest timestamp
// granularity of common file systems) is read again at the next look.
const racyWindow = 2 * time.Second

// dirFingerprint fingerprints the names and contents of the YAML files
// under a directory (hidden directories skipped), so that any edit,
// addition or removal changes it. A look walks the directory and stats
// each file; it reads only the files whose metadata differs from the last
// look's or was too recent then to be trusted, and reuses the content
// hashes of the others. Contents stay the source of truth: a file touched
// without being changed is read again but does not change the fingerprint.
type dirFingerprint struct {
	dir   string
	files map[string]fileSum // by path, as of the last look

	// Hooks for the tests; nil for the defaults.
	read func(path string) ([]byte, error) // reads a file's contents
	now  func() time.Time                  // the clock file times are compared with
}

// fileSum is one file as of a look.
type fileSum struct {
	stamp   fileStamp
	trusted bool   // the stamp was older than racyWindow at the look
	digest  string // of the contents, or the error that kept them unread
}

// fileStamp is what a stat tells of a file: a file whose stamp is the
// same as at a look where it was trusted is taken to be unchanged.
type fileStamp struct {
	size  int64
	mtime int64 // nanoseconds since the epoch
	mode  fs.FileMode
	sys   sysStamp // identity and change time, where the system has them
}

// trustedAt reports whether the file's last change is old enough at a
// look made at now.
func (s fileStamp) trustedAt(now time.Time) bool {
	cut := now.Add(-racyWindow).UnixNano()
	if s.mtime >= cut {
		return false
	}
	ctime, ok := s.sys.changeTime()
	return !ok || ctime < cut
}

// sum looks at the files and returns their fingerprint. The error says the
// directory holds more files than the fingerprint covers.
func (d *dirFingerprint) sum() (string, error) {
	now := time.Now()
	if d.now != nil {
		now = d.now()
	}
	h := sha256.New()
	files := make(map[string]fileSum, len(d.files))
	n := 0
	err := filepath.WalkDir(d.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			// An entry that cannot be read counts as its error, so that
			// the rest is still fingerprinted.
			fmt.Fprintf(h, "%s\x00unreadable\x00%v\x00", p, err)
			return nil
		}
		if e.IsDir() {
			if p != d.dir && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		if n++; n > maxFingerprintFiles {
			return fmt.Errorf("more than %d YAML files under %s", maxFingerprintFiles, d.dir)
		}
		f := d.file(p, e, now)
		files[p] = f
		fmt.Fprintf(h, "%s\x00%s\x00", p, f.digest)
		return nil
	})
	d.files = files
	return hex.EncodeToString(h.Sum(nil)), err
}

// file returns the sum of the file at p, reading it only when its stamp
// differs from the last look's or was not trusted then.
func (d *dirFingerprint) file(p string, e fs.DirEntry, now time.Time) fileSum {
	fi, err := e.Info()
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		fi, err = os.Stat(p) // the file the link leads to is the one read
	}
	if err != nil {
		return fileSum{digest: "unreadable\x00" + err.Error()}
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: fi.Mode(), sys: sysStampOf(fi)}
	if old, ok := d.files[p]; ok && old.trusted && old.stamp == st {
		return old
	}
	read := d.read
	if read == nil {
		read = readConfigFile
	}
	f := fileSum{stamp: st, trusted: st.trustedAt(now)}
	if !fi.Mode().IsRegular() {
		// Not read: opening a named pipe waits for a writer, and a device
		// may never end. Its mode, in the stamp, stands for it.
		f.digest = "not a regular file\x00" + fi.Mode().Type().String()
		return f
	}
	if data, err := read(p); err != nil {
		f.digest = "unreadable\x00" + err.Error()
	} else {
		sum := sha256.Sum256(data)
		f.digest = hex.EncodeToString(sum[:])
	}
	return f
}

// readConfigFile reads a config file, up to one byte more than a config
// may hold (enough to tell a file that is too large).
func readConfigFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return io.ReadAll(io.LimitReader(fh, agentconfig.MaxFileBytes+1))
}
