"""compile("c") against the NumPy backend and SymPy's lambdify on the scalar-heavy rows of
issue 18: µs per full-gradient call (float64), seconds to a callable, and the largest
difference from the NumPy backend's gradient.

    python bench/c_backend.py            # rosenbrock 10/1000, chain K=10/40/160/1000
    python bench/c_backend.py --repeat 9

Every cell runs in this one process, one after the other; per-call time is the best of
``--repeat`` runs, each long enough to last ~0.1 s (the minimum is the least disturbed
by other processes on a shared machine). The problems are bench/problems.py's: chain's
arguments are Python floats, rosenbrock's a float64 array. SymPy (diff per scalar +
lambdify(cse=True, "math")) runs only where it derives in seconds (rosenbrock 10,
chain K=10), as in bench/run.py's table. The C module cache is a fresh temporary
directory, so the seconds to a callable include the C compiler.
"""
import argparse
import os
import sys
import tempfile
import time
import timeit

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ["SYMGRAD_CACHE"] = tempfile.mkdtemp(prefix="symgrad-bench-c-")

import problems  # noqa: E402

ROWS = [("rosenbrock", "n=10", {"n": 10}), ("rosenbrock", "n=1000", {"n": 1000}),
        ("chain", "K=10", {"K": 10}), ("chain", "K=40", {"K": 40}),
        ("chain", "K=160", {"K": 160}), ("chain", "K=1000", {"K": 1000})]
SYMPY_ROWS = {("rosenbrock", "n=10"), ("chain", "K=10")}


def per_call_us(call, repeat):
    number = 1
    while True:
        t = timeit.timeit(call, number=number)
        if t > 0.1 or number > 1 << 20:
            break
        number *= 4
    return min(timeit.repeat(call, number=number, repeat=repeat)) / number * 1e6


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    print("| problem | sg numpy µs | sg c µs | SymPy lambdify µs | c / numpy | "
          "s to callable (numpy, c) | max |c - numpy| |")
    print("|---|---|---|---|---|---|---|")
    for problem, label, p in ROWS:
        inputs = problems.make_inputs(problem, p)
        cells = {b: problems.build_symgrad(problem, p, inputs, b) for b in ("numpy", "c")}
        us = {b: per_call_us(c.call, args.repeat) for b, c in cells.items()}
        grads = {b: c.to_numpy(c.call()) for b, c in cells.items()}
        diff = max(float(np.max(np.abs(a - b))) for a, b in zip(grads["numpy"], grads["c"]))
        lam = "—"
        if (problem, label) in SYMPY_ROWS:
            cell = problems.build_sympy(problem, p, inputs)
            lam = f"{per_call_us(cell.call, args.repeat):.2f}"
        print(f"| {problem} {label} | {us['numpy']:.2f} | {us['c']:.2f} | {lam} | "
              f"{us['c'] / us['numpy']:.2f} | {cells['numpy'].derive:.3f}, "
              f"{cells['c'].derive:.3f} | {diff:.1e} |", flush=True)
    print(f"\n(one process, best of {args.repeat}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          f", load average {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
