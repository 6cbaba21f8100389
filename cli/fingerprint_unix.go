//go:build linux || darwin

package cli

import (
	"io/fs"
	"syscall"
)

// sysStamp is a file's device, inode and change time: a write that keeps
// the size and resets the modification time still changes the change
// time, and a file replaced by another changes the inode.
type sysStamp struct {
	dev, ino uint64
	ctime    int64 // nanoseconds since the epoch
}

func sysStampOf(fi fs.FileInfo) sysStamp {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return sysStamp{}
	}
	return sysStamp{dev: uint64(st.Dev), ino: st.Ino, ctime: changeTime(st)}
}

func (s sysStamp) changeTime() (int64, bool) { return s.ctime, s.ino != 0 }

// haveChangeTime tells whether stamps hold the change time.
const haveChangeTime = true
