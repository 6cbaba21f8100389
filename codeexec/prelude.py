# The supervisor of one execution. It reads the request (code, input files,
# limits) as JSON from stdin, prepares the working directory, forks the
# process that runs the code, and reports to the executor on fd 3.
#
# Confined, it is process 1 of new user, PID, mount, IPC (and network)
# namespaces: it mounts a size-limited tmpfs on the working directory and a
# fresh /proc, and when the code's main process ends, or its time is up, it
# kills every other process of the namespace. The child it forks sets the
# resource limits, drops its capabilities and confines itself (Landlock,
# seccomp) before running the code; the supervisor stays outside that
# confinement, so the code can neither signal nor trace it.
#
# Records on fd 3, each a JSON line, a file's line followed by its bytes:
#   {"setup": msg}             confinement unavailable; nothing ran
#   {"error": msg}             bad input; nothing ran
#   {"file": name, "size": n}  an output file (every regular file)
#   {"skip": name, "why": msg} a file that cannot be named on the wire
#   {"end": true, "exit": n, "signal": n, "timeout": bool}
import ctypes
import json
import os
import resource
import signal
import sys

_CAP_VERSION_3 = 0x20080522


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _check(ret, what):
    if ret != 0:
        raise OSError(ctypes.get_errno(), what)


def _mount(source, target, fstype, flags, data):
    _check(_libc.mount(source.encode(), target.encode(), fstype.encode(), ctypes.c_ulong(flags),
                       data.encode() if data is not None else None), "mount " + target)


def _landlock(workdir, net):
    sc = _libc.syscall
    abi = sc(444, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    write = 0
    for bit in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12):  # write, remove, make any node
        write |= 1 << bit
    if abi >= 2:
        write |= 1 << 13  # refer (rename and link across directories)
    if abi >= 3:
        write |= 1 << 14  # truncate
    # TCP bind and connect (ABI 4); signals and abstract unix sockets
    # outside the domain (ABI 6).
    attr = _RulesetAttr(write, 3 if abi >= 4 and not net else 0, 3 if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    fd = sc(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    for path, allowed in ((workdir, write), (os.devnull, (1 << 1) | ((1 << 14) if abi >= 3 else 0))):
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = _PathBeneath(allowed, pfd)
        _check(sc(445, ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)),
               "landlock_add_rule " + path)
        os.close(pfd)
    _check(sc(446, ctypes.c_int(fd), ctypes.c_uint32(0)), "landlock_restrict_self")
    os.close(fd)


# Per architecture: audit arch, socket, socketpair, memfd_create.
_ARCH = {
    "x86_64": (0xC000003E, 41, 53, 319),
    "aarch64": (0xC00000B7, 198, 199, 279),
}


def _seccomp():
    import platform
    arch = _ARCH.get(platform.machine())
    if arch is None:
        raise OSError(0, "seccomp: unsupported architecture " + platform.machine())
    audit, sys_socket, sys_pair, sys_memfd = arch
    allow, nosys = 0x7FFF0000, 0x00050000 | 38
    deny = 0x00050000 | 13  # EACCES
    # Socket families other than IPv4, IPv6 and netlink (all scoped to the
    # network namespace) are refused: unix sockets reach the host's
    # services, vsock the hypervisor. Socket pairs stay (asyncio, pipes)
    # unless datagram ones, which could send to a named socket. io_uring
    # would bypass these checks; memfd_create would hold memory no limit
    # counts.
    prog = [
        ("ld", 4), ("jeq", audit, 0, "nosys"),
        ("ld", 0), ("jge", 0x40000000, "nosys", 0),
        ("jeq", sys_socket, "socket", 0),
        ("jeq", sys_pair, "pair", 0),
        ("jeq", 425, "deny", 0),  # io_uring_setup
        ("jeq", sys_memfd, "deny", 0),
        ("ret", allow),
        ("socket:ld", 16),
        ("jeq", 2, "allow", 0), ("jeq", 10, "allow", 0), ("jeq", 16, "allow", 0),
        ("ret", deny),
        ("pair:ld", 24), ("and", 0xF),
        ("jeq", 1, "allow", 0), ("jeq", 5, "allow", 0),
        ("deny:ret", deny),
        ("allow:ret", allow),
        ("nosys:ret", nosys),
    ]
    labels = {}
    for i, ins in enumerate(prog):
        if ":" in ins[0]:
            labels[ins[0].split(":")[0]] = i
    code = {"ld": 0x20, "jeq": 0x15, "jge": 0x35, "ret": 0x06, "and": 0x54}
    out = []
    for i, ins in enumerate(prog):
        op = ins[0].split(":")[-1]
        if op in ("jeq", "jge"):
            jt, jf = (0 if t == 0 else labels[t] - i - 1 for t in ins[2:4])
            out.append(_SockFilter(code[op], jt, jf, ins[1]))
        else:
            out.append(_SockFilter(code[op], 0, 0, ins[1]))
    arr = (_SockFilter * len(out))(*out)
    fprog = _SockFprog(len(out), arr)
    _check(_libc.prctl(22, 2, ctypes.byref(fprog), 0, 0), "seccomp")  # PR_SET_SECCOMP, filter


def _drop_caps():
    cap = 0
    while _libc.prctl(24, cap, 0, 0, 0) == 0:  # PR_CAPBSET_DROP
        cap += 1
    _libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data), "capset")


def _limit(which, v):
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        v = min(v, hard)
    resource.setrlimit(which, (v, v))


def _child(req, ready):
    """Confines this process; returns the code to run."""
    confined = req["namespaces"]
    if not confined:
        os.setpgid(0, 0)
        _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    try:
        _limit(resource.RLIMIT_CPU, req["cpu"])
        _limit(resource.RLIMIT_AS, req["mem"])
        _limit(resource.RLIMIT_FSIZE, req["fsize"])
        _limit(resource.RLIMIT_NOFILE, req["nofile"])
        # The supervisor counts: it runs as the same user in the namespace.
        _limit(resource.RLIMIT_NPROC, req["nproc"] + 1)
        if confined:
            _drop_caps()
        _check(_libc.prctl(38, 1, 0, 0, 0), "prctl no_new_privs")
        _landlock(req["workdir"], req["net"])
        _seccomp()
    except (OSError, AttributeError) as e:
        if req["require"]:
            os.write(ready, ("%s" % e).encode())
            os._exit(1)
    os.close(ready)
    os.chdir(req["workdir"])
    return req["code"]


def _send(out, rec, data=b""):
    out.write(json.dumps(rec).encode() + b"\n")
    if data:
        out.write(data)


def _write_inputs(req):
    import base64
    wd = req["workdir"]
    for f in req["files"]:
        p = os.path.join(wd, f["name"])
        os.makedirs(os.path.dirname(p), mode=0o700, exist_ok=True)
        with open(p, "wb") as fh:
            fh.write(base64.b64decode(f["data"]))


def _outputs(out, wd):
    try:
        _walk(out, wd)
    except (OSError, RecursionError) as e:
        _send(out, {"skip": "the rest", "why": "%s: %s" % (type(e).__name__, e)})


def _walk(out, wd):
    for top, dirs, files in os.walk(wd):
        dirs.sort()
        for name in sorted(files):
            p = os.path.join(top, name)
            rel = os.path.relpath(p, wd)
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                _send(out, {"skip": rel.encode("utf-8", "replace").decode(), "why": "the name is not UTF-8"})
                continue
            try:
                fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue  # a symbolic link, a socket, a file it made unreadable
            with os.fdopen(fd, "rb") as fh:
                st = os.fstat(fh.fileno())
                if (st.st_mode & 0o170000) != 0o100000:
                    continue
                _send(out, {"file": rel, "size": st.st_size})
                left = st.st_size
                while left > 0:
                    b = fh.read(min(left, 1 << 20)) or b"\0" * min(left, 1 << 20)
                    out.write(b)
                    left -= len(b)


class _Expired(Exception):
    pass


def _expire(*_):
    raise _Expired()


def _supervise(req, out, pid):
    status, timeout = 0, False
    signal.signal(signal.SIGALRM, _expire)
    try:
        # The alarm fires once, and wherever it interrupts this block the
        # outer handler catches it.
        try:
            signal.setitimer(signal.ITIMER_REAL, req["timeout"])
            while True:
                p, st = os.wait()
                if p == pid:
                    status = st
                    break
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        timeout = True
    try:
        if req["namespaces"]:
            os.kill(-1, signal.SIGKILL)  # every process of the namespace but this one
        else:
            os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass  # none left
    while True:
        try:
            p, st = os.wait()
        except ChildProcessError:
            break
        if p == pid and timeout:
            status = st
    end = {"end": True, "timeout": timeout, "exit": 0, "signal": 0}
    if os.WIFSIGNALED(status):
        end["signal"] = os.WTERMSIG(status)
    elif os.WIFEXITED(status):
        end["exit"] = os.WEXITSTATUS(status)
    _outputs(out, req["workdir"])
    _send(out, end)


def _main():
    req = json.load(sys.stdin.buffer)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    out = os.fdopen(3, "wb", buffering=1 << 16)
    wd = req["workdir"]
    try:
        if req["namespaces"]:
            _mount("none", "/", "", 0x4000 | 0x40000, None)  # MS_REC | MS_PRIVATE
            _mount("tmpfs", wd, "tmpfs", 0x2 | 0x4,  # MS_NOSUID | MS_NODEV
                   "size=%d,nr_inodes=%d,mode=0700" % (req["disk"], req["inodes"]))
            try:
                _mount("proc", "/proc", "proc", 0x2 | 0x4 | 0x8, None)  # and MS_NOEXEC
            except OSError:
                pass  # then the host's /proc stays visible, read-only to the code
    except OSError as e:
        _send(out, {"setup": str(e)})
        out.close()
        os._exit(0)
    try:
        _write_inputs(req)
    except OSError as e:
        _send(out, {"error": "input files: %s" % e})
        out.close()
        os._exit(0)
    req["files"] = None
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        out.close()
        os.close(r)
        return _child(req, w)
    os.close(w)
    failure = os.read(r, 4096)
    os.close(r)
    if failure:
        os.waitpid(pid, 0)
        _send(out, {"setup": failure.decode(errors="replace")})
    else:
        _supervise(req, out, pid)
    try:
        out.close()
    except OSError:
        pass
    os._exit(0)


_code = compile(_main(), "<code>", "exec")
del _main, _child, _supervise, _outputs, _write_inputs, _send, _landlock, _seccomp, _drop_caps, _limit
exec(_code, {"__name__": "__main__", "__builtins__": __builtins__})
