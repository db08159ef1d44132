"""NumPy code compiled in a process that has imported torch limits BLAS to one thread
(codegen/threads.py), unless the user chose a thread count; each case runs in a fresh
process, since the limit is process-wide."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("threadpoolctl")
ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, sys
import numpy
if sys.argv[1] == "torch":
    import torch
import symgrad as sg
from symgrad.codegen import threads
from threadpoolctl import threadpool_info
g = sg.grad_fn(lambda x: sg.sum(x @ x), shapes={"x": (3, 3)})
g.compile()(numpy.eye(3))
blas = [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]
print(json.dumps({"action": threads.settings()["symgrad"], "blas": blas}))
"""


def run(mode, **env):
    clean = {k: v for k, v in os.environ.items()
             if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                          "BLIS_NUM_THREADS", "SYMGRAD_BLAS_THREADS")}
    clean.update(env, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True,
                         env=clean, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_torch_in_the_process_limits_blas_to_one_thread():
    got = run("torch")
    assert got["action"].startswith("BLAS limited to 1 thread")
    assert set(got["blas"]) == {1}


def test_without_torch_blas_is_left_alone():
    got = run("plain")
    assert got["action"] == "not configured yet"


def test_user_settings_win():
    got = run("torch", OPENBLAS_NUM_THREADS="2")
    assert got["action"].startswith("left alone: set by the user")
    got = run("torch", SYMGRAD_BLAS_THREADS="keep")
    assert got["action"] == "left alone: SYMGRAD_BLAS_THREADS=keep"
    got = run("plain", SYMGRAD_BLAS_THREADS="1")
    assert got["action"].startswith("BLAS limited to 1 thread") and set(got["blas"]) == {1}


HEAP_PROBE = """
import resource, numpy as np, symgrad as sg
from symgrad.codegen import heap
g = sg.grad_fn(lambda x: sg.sum(sg.sin(x[1:]) * x[:-1] ** 2), shapes={"x": ("n",)})
f = g.compile("numpy")
x = np.linspace(-1, 1, 200_000)
for _ in range(3):
    f(x)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    f(x)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
print(heap.settings()["symgrad heap"])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_compiled_array_code_keeps_its_heap_between_calls():
    """Temporaries of 1.6 MB are served from the kept heap: no page faults per call (they
    cost ~2 µs per 4 KB page), unless the user's MALLOC_* settings or SYMGRAD_HEAP=keep."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    run = subprocess.run([sys.executable, "-c", HEAP_PROBE], capture_output=True, text=True,
                         env=clean, timeout=300)
    faults, action = run.stdout.splitlines()
    assert float(faults) < 50 and action.startswith("glibc keeps freed memory"), run.stdout
    run = subprocess.run([sys.executable, "-c", HEAP_PROBE], capture_output=True, text=True,
                         env=dict(clean, SYMGRAD_HEAP="keep"), timeout=300)
    faults, action = run.stdout.splitlines()
    assert action == "left alone: SYMGRAD_HEAP=keep" and float(faults) > 200, run.stdout
