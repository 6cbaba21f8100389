//go:build !linux && !darwin

package cli

import "io/fs"

// sysStamp is empty where the system's stat has no change time a portable
// program can read: stamps are then the size, modification time and mode,
// and a write that keeps the size and resets the modification time to an
// old value is not seen until the file changes again.
type sysStamp struct{}

func sysStampOf(fs.FileInfo) sysStamp { return sysStamp{} }

func (sysStamp) changeTime() (int64, bool) { return 0, false }

// haveChangeTime tells whether stamps hold the change time.
const haveChangeTime = false
