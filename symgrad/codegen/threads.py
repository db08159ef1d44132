"""BLAS threads for compiled NumPy code when torch shares the process.

NumPy's OpenBLAS runs a pool of threads, one per core, and torch runs an OpenMP pool whose
threads keep spinning for a while after each torch op. With both in one process on a small
machine the pools fight for the cores: measured on this project's 2-core VM, a 1000×50
``Xᵀ diag(s) X`` right after a torch op took 154 ms with NumPy's default two BLAS threads and
0.93 ms with one (165×); without torch in the process one thread cost 2× at worst on large
products and nothing on small ones.

So when a NumPy function is compiled in a process that has imported torch, symgrad limits
the BLAS libraries to one thread (``threadpoolctl``), once, unless the user has chosen:

* ``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS`` or ``BLIS_NUM_THREADS`` set
  in the environment: left alone;
* ``SYMGRAD_BLAS_THREADS=keep``: never touched; ``SYMGRAD_BLAS_THREADS=<n>``: n threads,
  whether torch is loaded or not.

The limit is process-wide (BLAS has no per-call setting that costs less than a few
microseconds, which is the whole call on small problems): the BLAS libraries loaded now are
limited, and ``OPENBLAS_NUM_THREADS`` is set (when unset) for those loaded later, such as
SciPy's own OpenBLAS, which generated code imports for ``expit`` or triangular solves. ``settings()`` says what was
done, and ``bench/run.py`` records it.
"""
import os
import sys
import threading

USER_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "BLIS_NUM_THREADS")
_state = {"done": False, "action": "not configured yet"}
_lock = threading.Lock()


def _wanted():
    """(threads or None, reason)."""
    choice = os.environ.get("SYMGRAD_BLAS_THREADS", "").strip()
    if choice == "keep":
        return None, "SYMGRAD_BLAS_THREADS=keep"
    if choice:
        try:
            return max(1, int(choice)), f"SYMGRAD_BLAS_THREADS={choice}"
        except ValueError:
            return None, f"SYMGRAD_BLAS_THREADS={choice!r} is not 'keep' or a number; ignored"
    user = [v for v in USER_VARIABLES if os.environ.get(v)]
    if user:
        return None, "set by the user (" + ", ".join(f"{v}={os.environ[v]}" for v in user) + ")"
    if "torch" not in sys.modules:
        return None, "torch not loaded"
    return 1, "torch is loaded in this process (its OpenMP pool and BLAS's would oversubscribe)"


def configure():
    """Apply the policy above once per process, when a NumPy function is compiled."""
    if _state["done"]:
        return
    threads, reason = _wanted()
    if threads is None and reason == "torch not loaded":
        return          # decided again at the next compile: torch may be imported later
    with _lock:
        if _state["done"]:
            return
        _state["done"] = True
        if threads is None:
            _state["action"] = f"left alone: {reason}"
            return
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:
            _state["action"] = f"not limited (threadpoolctl is not installed): {reason}"
            return
        _state["limiter"] = threadpool_limits(limits=threads, user_api="blas")
        os.environ.setdefault("OPENBLAS_NUM_THREADS", str(threads))
        _state["action"] = f"BLAS limited to {threads} thread(s): {reason}"


def settings():
    """What symgrad did to BLAS threads, and the BLAS libraries' thread counts now."""
    out = {"symgrad": _state["action"]}
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return out
    for lib in threadpool_info():
        name = os.path.basename(lib["filepath"]).split(".so")[0].split(".dylib")[0]
        out[f"{lib['internal_api']} {name}"] = lib["num_threads"]
    return out
