# Runs before the model's code: reads the code from stdin, sets resource
# limits and confines writes to the working directory with Landlock, then
# runs the code as __main__.
import ctypes
import os
import resource
import sys


def _limit(which, env):
    v = int(os.environ.pop(env))
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        v = min(v, hard)
    resource.setrlimit(which, (v, v))


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("fd", ctypes.c_int32)]


def _confine(workdir, net):
    libc = ctypes.CDLL(None, use_errno=True)
    sc = libc.syscall
    sc.restype = ctypes.c_long
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
    attr = _RulesetAttr(write, 3 if abi >= 4 and not net else 0)  # tcp bind and connect
    size = ctypes.sizeof(_RulesetAttr) if abi >= 4 else 8
    fd = sc(444, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    for path, allowed in ((workdir, write), (os.devnull, (1 << 1) | ((1 << 14) if abi >= 3 else 0))):
        pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        rule = _PathBeneath(allowed, pfd)
        if sc(445, ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule " + path)
        os.close(pfd)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # no new privileges
        raise OSError(ctypes.get_errno(), "prctl")
    if sc(446, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    os.close(fd)


def _main():
    src = sys.stdin.read()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    workdir = os.environ.pop("LOOM_WORKDIR")
    confine = os.environ.pop("LOOM_CONFINE") == "true"
    net = os.environ.pop("LOOM_NET") == "true"
    _limit(resource.RLIMIT_CPU, "LOOM_CPU")
    _limit(resource.RLIMIT_AS, "LOOM_MEM")
    _limit(resource.RLIMIT_FSIZE, "LOOM_FSIZE")
    _limit(resource.RLIMIT_NOFILE, "LOOM_NOFILE")
    try:
        _confine(workdir, net)
    except (OSError, AttributeError) as e:
        if confine:
            sys.stderr.write("landlock unavailable: %s\n" % e)
            sys.exit(87)
    os.chdir(workdir)
    return src


_code = compile(_main(), "<code>", "exec")
del _main, _confine, _limit, _RulesetAttr, _PathBeneath
exec(_code, {"__name__": "__main__", "__builtins__": __builtins__})
