"""µs per full-gradient call of symgrad's Numba backend against its NumPy backend, on the
mid-size rows of issue 18's table where PyTensor's Numba mode led (rosenbrock 1000,
chain K=40 and K=160, mlp 16/16/16 B8) and logreg N=1000 d=50.

    python bench/numba_backend.py [--repeat 7]

One thread for BLAS (set before NumPy loads), float64, the problems of bench/problems.py;
each cell is the best of ``--repeat`` timings of a loop sized to take ~0.2 s. Compile
times are reported too: the first is Numba's compilation (or a load from its on-disk
cache, ``$SYMGRAD_CACHE``), which a second run of this script shows.
"""
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import problems as P  # noqa: E402

ROWS = [("rosenbrock 1000", "rosenbrock", {"n": 1000}),
        ("chain K=40", "chain", {"K": 40}),
        ("chain K=160", "chain", {"K": 160}),
        ("mlp 16/16/16 B8", "mlp", {"d": 16, "h": 16, "o": 16, "B": 8}),
        ("logreg N=1000 d=50", "logreg", {"N": 1000, "d": 50, "lam": 1e-2})]


def per_call(fn, args, repeat):
    """Best µs per call of ``fn(*args)`` over ``repeat`` timed loops."""
    fn(*args)
    t = timeit.Timer(lambda: fn(*args))
    number, _ = t.autorange()
    number = max(number, 1)
    return min(t.repeat(repeat=repeat, number=number)) / number * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args(argv)
    import symgrad as sg
    print(f"# OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']}, float64, "
          f"best of {opts.repeat}; µs per full-gradient call")
    print("| problem | symgrad numpy | symgrad numba | speed-up | numba compile s |")
    print("|---|---|---|---|---|")
    for label, problem, p in ROWS:
        f, shapes, wrt = P.sg_function(problem, p)
        g = sg.grad_fn(f, wrt=wrt, shapes=shapes)
        inputs = P.make_inputs(problem, p)
        if problem == "chain":
            args = [float(v) for v in inputs.values()]
        else:
            args = list(inputs.values())
        start = time.perf_counter()
        fast = g.compile("numba")
        compile_s = time.perf_counter() - start
        slow = g.compile("numpy")
        for a, b in zip(fast(*args), slow(*args)):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
        t_np = per_call(slow, args, opts.repeat)
        t_nb = per_call(fast, args, opts.repeat)
        print(f"| {label} | {t_np:.2f} | **{t_nb:.2f}** | {t_np / t_nb:.1f}× | "
              f"{compile_s:.2f} |", flush=True)


if __name__ == "__main__":
    main()
