"""Seconds from a Python function to a callable compiled gradient (issue 18, Build 6).

Each case runs in a fresh process (``import symgrad`` done, not timed) pinned to one core
with one BLAS thread, and times ``sg.grad_fn(f, ...)`` + ``.compile("numpy")`` + the first
call, the figure ``bench/run.py`` reports as "derive s":

    small 4 scalars    f(a, b, c, d) = sin(a)*b + c*d**2 - exp(a*c): the fixed cost of the
                       first gradient function of a process, of a second one after it
                       (cos, log, tanh: ops new to the process) and of a third one of
                       the first one's ops
    bench problems     rosenbrock n=10, mlp 16/16/16 b8, logreg N=1000 d=50 (problems.py)
    chain K            f = x_K, x_{k+1} = sin(x_k)*x_k + cos(y)*x_k, for K = 10³ and 10⁴, with
                       time(10⁴)/time(10³) (10 is linear)
    CasADi SX          the same chain: SX symbols, ca.gradient, ca.Function, first call
                       (when casadi is importable)

    python bench/derive.py             # every case, 3 fresh processes each, best of 3
    python bench/derive.py --repeat 1  # one process per case
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def small(sg):
    def f(a, b, c, d):
        return sg.sin(a) * b + c * d ** 2 - sg.exp(a * c)

    def g(a, b, c, d):
        return sg.cos(a) * b + c * d ** 3 - sg.log(a * c) + sg.tanh(b * d)

    def h(p, q, r, s):
        return sg.exp(p) * q - r * s ** 2 + sg.sin(p * s)
    return f, g, h


def chain(sg, K):
    def f(x, y):
        for _ in range(K):
            x = sg.sin(x) * x + sg.cos(y) * x
        return x
    return f


def case_main(name, K):
    """Runs in the child: prints the seconds of one case as JSON."""
    if hasattr(os, "sched_setaffinity"):
        try:
            allowed = sorted(os.sched_getaffinity(0))
            os.sched_setaffinity(0, {1 if 1 in allowed else allowed[-1]})
        except OSError:
            pass
    if name == "casadi":
        import casadi as ca
        t0 = time.perf_counter()
        x, y = ca.SX.sym("x"), ca.SX.sym("y")
        v = x
        for _ in range(K):
            v = ca.sin(v) * v + ca.cos(y) * v
        fn = ca.Function("g", [x, y], [ca.gradient(v, x), ca.gradient(v, y)])
        fn(1.0, 1.2)
        return {"s": time.perf_counter() - t0}
    import symgrad as sg
    if name in ("small", "small-second", "small-third"):
        f, g, h = small(sg)
        out = {}
        for label, fn in (("small", f), ("small-second", g), ("small-third", h)):
            t0 = time.perf_counter()
            c = sg.grad_fn(fn).compile("numpy")
            c(0.5, 1.5, 2.0, 0.7)
            out[label] = time.perf_counter() - t0
        return {"s": out[name]}
    if name == "chain":
        f = chain(sg, K)
        t0 = time.perf_counter()
        c = sg.grad_fn(f).compile("numpy")
        c(1.0, 1.2)
        return {"s": time.perf_counter() - t0}
    sys.path.insert(0, str(HERE))
    import numpy as np
    import problems as P
    problem, label = name.split(":")
    params = dict(P.SIZES[problem])[label]
    inputs = P.make_inputs(problem, params)
    cell = P.build_symgrad(problem, params, {k: np.asarray(v) for k, v in inputs.items()},
                           "numpy")
    return {"s": cell.derive}


CASES = [("small", "small 4 scalars, first function", "small", 0),
         ("small-second", "small 4 scalars, second function", "small-second", 0),
         ("small-third", "small 4 scalars, third (known ops)", "small-third", 0),
         ("rosenbrock", "rosenbrock n=10", "rosenbrock:n=10", 0),
         ("mlp", "mlp 16/16/16 b8", "mlp:16/16/16 b8", 0),
         ("logreg", "logreg N=1000 d=50", "logreg:N=1000 d=50", 0),
         ("chain1000", "chain K=1000", "chain", 1000),
         ("chain10000", "chain K=10000", "chain", 10000),
         ("casadi1000", "CasADi SX chain K=1000", "casadi", 1000),
         ("casadi10000", "CasADi SX chain K=10000", "casadi", 10000)]


def run(name, K):
    env = dict(os.environ, **THREADS)
    proc = subprocess.run([sys.executable, __file__, "--case", name, "--K", str(K)],
                          capture_output=True, text=True, env=env, timeout=300)
    for line in proc.stdout.splitlines():
        if line.startswith("@@"):
            return json.loads(line[2:])["s"]
    raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr else "no output")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per case (best)")
    ap.add_argument("--only", help="comma list of case keys: " + ",".join(c[0] for c in CASES))
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--K", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case:
        print("@@" + json.dumps(case_main(args.case, args.K)))
        return
    try:
        import casadi  # noqa: F401
        have_casadi = True
    except ImportError:
        have_casadi = False
    import numpy
    import symgrad
    only = set(args.only.split(",")) if args.only else None
    print(f"symgrad {symgrad.__version__} ({Path(symgrad.__file__).parent}), Python "
          f"{platform.python_version()}, NumPy {numpy.__version__}; load "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; fresh process per run, one "
          f"core, one BLAS thread; best of {args.repeat}")
    print()
    print(f"{'case':<36} {'seconds to callable':>20}")
    results = {}
    for key, label, name, K in CASES:
        if only and key not in only:
            continue
        if name == "casadi" and not have_casadi:
            print(f"{label:<36} {'(casadi not installed)':>20}")
            continue
        best = min(run(name, K) for _ in range(args.repeat))
        results[key] = best
        print(f"{label:<36} {best:>20.4f}", flush=True)
    if "chain1000" in results and "chain10000" in results:
        print(f"\nchain time(10⁴)/time(10³) = {results['chain10000'] / results['chain1000']:.1f}")
    if "chain1000" in results and "casadi1000" in results:
        print(f"chain K=1000: symgrad / CasADi SX = "
              f"{results['chain1000'] / results['casadi1000']:.2f}")


if __name__ == "__main__":
    main()
