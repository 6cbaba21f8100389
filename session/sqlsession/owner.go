package sqlsession

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync"
)

// A SQLite lease's owner token names the process that holds it:
// "RANDOM@HOST/PID/START", where HOST stands for the machine, its boot and
// its process namespace (a hash, so nothing of them is stored), PID is the
// process id and START its start time. A process that finds a lease whose
// owner shares its HOST can tell whether that owner still runs: a lease
// left by a process that died (SIGKILL, a crash) is taken over at once
// instead of when it expires. A SQLite file is shared by the processes of
// one machine, which is where the check applies; anything else waits for
// the lease to expire, as before.

// ownerSuffix is "@HOST/PID/START" of this process, or "" where the
// process cannot be identified.
var ownerSuffix = sync.OnceValue(func() string {
	host, start := hostID(), processStart(os.Getpid())
	if host == "" || start == "" {
		return ""
	}
	return "@" + host + "/" + strconv.Itoa(os.Getpid()) + "/" + start
})

// hostID is a hash of what makes process ids comparable: the machine, its
// boot and the process-id namespace; "" where any is unknown.
func hostID() string {
	name, err := os.Hostname()
	if err != nil {
		return ""
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	h := sha256.Sum256([]byte(name + "\x00" + strings.TrimSpace(string(boot)) + "\x00" + ns))
	return hex.EncodeToString(h[:8])
}

// processStart returns the start time of process pid in clock ticks since
// boot (field 22 of /proc/PID/stat), or "" when there is no such process.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return ""
	}
	return fields[19] // field 22 of the whole line
}

// ownerGone reports whether the lease owner token names a process of this
// machine and namespace that no longer runs (none with its id, or one
// started at another time). A token that names no process, or one of
// another machine, is never gone: its lease ends when it expires.
func ownerGone(owner string) bool {
	_, id, ok := strings.Cut(owner, "@")
	mine := ownerSuffix()
	if !ok || mine == "" {
		return false
	}
	parts := strings.Split(id, "/")
	if len(parts) != 3 || "@"+parts[0] != mine[:strings.IndexByte(mine, '/')] {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	return processStart(pid) != parts[2]
}
