"""The C heap under compiled array code: keep freed blocks for the next call.

A compiled gradient allocates its temporaries afresh on every call (NumPy arrays have no
other way), and large ones come from glibc's heap or from ``mmap``. When glibc gives freed
memory back to the kernel between calls (a block above its mmap threshold is unmapped, and
the top of the heap is trimmed above its trim threshold), the next call touches the same
sizes again and faults every page back in, about 2 µs per 4 KB page: measured on this
project's 2-core VM, the Rosenbrock gradient at n = 10⁵ (six 800 KB temporaries) took
1.6 ms per call that way and 0.2 ms with the memory kept, which is also what hand-written
NumPy code gets once its process keeps it. JAX and torch keep their own buffer pools for
the same reason.

So when array code is compiled (NumPy, C and Numba backends), symgrad asks glibc, once per
process, to serve blocks up to 32 MB from the heap and to keep up to 256 MB of free heap
(``mallopt``), unless the user chose:

* ``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or ``MALLOC_TOP_PAD_`` set in the
  environment (glibc's own tunables): left alone;
* ``SYMGRAD_HEAP=keep``: never touched.

The cost is memory: up to 256 MB that the process freed stays mapped (it is reused by the
next allocation, not lost). On other C libraries (macOS, musl, Windows) nothing is done.
``settings()`` says what was done, and ``bench/run.py`` records it.
"""
import ctypes
import ctypes.util
import os
import sys
import threading

USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")
M_TRIM_THRESHOLD = -1     # glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 1024 * 1024      # glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX)
TRIM_THRESHOLD = 256 * 1024 * 1024
_state = {"done": False, "action": "not configured yet"}
_lock = threading.Lock()


def _mallopt():
    """glibc's ``mallopt``, or None on another C library."""
    if not sys.platform.startswith("linux"):
        return None
    try:   # the process's own symbols hold libc's: no ldconfig run (a few ms)
        fn = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        try:
            fn = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallopt
        except (OSError, AttributeError):
            return None
    fn.argtypes, fn.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return fn


def configure():
    """Apply the policy above once per process, when array code is compiled."""
    if _state["done"]:
        return
    with _lock:
        if _state["done"]:
            return
        _state["done"] = True
        if os.environ.get("SYMGRAD_HEAP", "").strip() == "keep":
            _state["action"] = "left alone: SYMGRAD_HEAP=keep"
            return
        user = [v for v in USER_VARIABLES if os.environ.get(v)]
        if user:
            _state["action"] = "left alone: set by the user (" + ", ".join(
                f"{v}={os.environ[v]}" for v in user) + ")"
            return
        mallopt = _mallopt()
        if mallopt is None:
            _state["action"] = "left alone: not glibc"
            return
        ok = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD,
                                                                  TRIM_THRESHOLD)
        _state["action"] = (f"glibc keeps freed memory: mmap threshold {MMAP_THRESHOLD >> 20} MB, "
                            f"trim threshold {TRIM_THRESHOLD >> 20} MB" if ok
                            else "left alone: mallopt refused the settings")


def settings():
    """What symgrad did to the C heap."""
    return {"symgrad heap": _state["action"]}
