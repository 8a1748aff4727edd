"""The gpu-trace injection library of this process, through ctypes.

The library is the one the CUDA driver loads (``CUDA_INJECTION64_PATH``) or
rocprofiler-sdk loads (``ROCP_TOOL_LIBRARIES``); ``gpu-trace record`` sets
both. It is found with ``RTLD_NOLOAD``: ``dlopen`` of a path already loaded
returns that same instance, and never loads anything else. A gpu-trace
library that the environment names but that is not loaded yet (CUDA loads
its injection only at ``cuInit``) is loaded here: the process is traced, the
runtime will load this same file later and get this same instance, and the
library keeps a request made before its tool starts until it does (see
``gpu_trace.h``). A process whose environment names no gpu-trace library
loads nothing, and every call does nothing, with one warning.
"""

import ctypes
import os
import threading
import warnings

# What the C functions return (gpu_trace.h).
OK = 0
PENDING = 1
OFF = -1
FIXED = -2
INVALID = -3

# glibc's value where the os module lacks it.
_RTLD_NOLOAD = getattr(os, "RTLD_NOLOAD", 4)
_LIB_PREFIX = "libgpu_trace_"


class GpuTraceWarning(RuntimeWarning):
    """What gpu_trace warns with: gpu-trace is absent or off, once each."""


_lock = threading.Lock()
_libs = None
_warned = set()


def _warn_once(key, message):
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn("gpu-trace: " + message, GpuTraceWarning, stacklevel=4)


def _named_paths():
    """The injection libraries the environment names, CUDA's first."""
    paths = []
    cuda = os.environ.get("CUDA_INJECTION64_PATH", "")
    if cuda:
        paths.append(cuda)
    for p in os.environ.get("ROCP_TOOL_LIBRARIES", "").split(":"):
        if p and p not in paths:
            paths.append(p)
    return paths


def _open(path):
    try:
        return ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL | _RTLD_NOLOAD)
    except OSError:
        pass
    if not os.path.basename(path).startswith(_LIB_PREFIX):
        return None
    try:
        return ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except OSError:
        return None


def _bind(lib):
    """The C API of ``lib``, or None when it is not a gpu-trace library."""
    try:
        api = {
            "version": lib.gpu_trace_version,
            "start": lib.gpu_trace_start,
            "stop": lib.gpu_trace_stop,
            "window_begin": lib.gpu_trace_window_begin,
            "window_end": lib.gpu_trace_window_end,
            "is_active": lib.gpu_trace_is_active,
            "range_push": lib.gpu_trace_range_push,
            "range_pop": lib.gpu_trace_range_pop,
        }
    except AttributeError:
        return None
    for name, f in api.items():
        f.restype = ctypes.c_char_p if name == "version" else ctypes.c_int
        f.argtypes = [ctypes.c_char_p] if name in ("window_begin", "range_push") else []
    return api


def libraries():
    """The C APIs of the gpu-trace libraries of this process (found once)."""
    global _libs
    with _lock:
        if _libs is None:
            found = []
            for path in _named_paths():
                lib = _open(path)
                api = _bind(lib) if lib is not None else None
                if api is not None:
                    found.append(api)
            _libs = found
        return _libs


def _name(name):
    if not isinstance(name, str):
        name = str(name)
    return name.replace("\0", " ").encode("utf-8", "replace")


def call(what, name=None):
    """Calls ``gpu_trace_<what>`` of every gpu-trace library of the process;
    the most hopeful result (OK over PENDING over the errors), or None when
    there is none. Never raises."""
    try:
        libs = libraries()
        if not libs:
            _warn_once(
                "absent",
                "this process is not traced (run it under `gpu-trace record`); "
                "gpu_trace's calls do nothing",
            )
            return None
        args = (_name(name),) if name is not None else ()
        results = [lib[what](*args) for lib in libs]
    except Exception as e:  # never the program's problem
        _warn_once("error", "gpu_trace.%s failed (%s); it does nothing" % (what, e))
        return None
    if what == "is_active":
        return max(results)
    for want in (OK, PENDING):
        if want in results:
            return want
    rc = results[0]
    if rc == OFF:
        _warn_once("off", "gpu-trace is off in this process (its own line on stderr says why); "
                   "gpu_trace's calls do nothing")
    elif rc == FIXED:
        _warn_once("fixed", "recording cannot be switched in this process "
                   "(INJECTION_CONTROL=off without a time option, or tracing has ended); "
                   "it records the whole run")
    return rc


def version():
    """The version of the first gpu-trace library of the process, or None."""
    try:
        libs = libraries()
        return libs[0]["version"]().decode() if libs else None
    except Exception:
        return None
