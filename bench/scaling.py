"""How symgrad scales with the length of a computation, next to sympy.diff.

The function is the chain

    x_0 = x;   x_{k+1} = sin(x_k)*x_k + cos(y)*x_k;   f(x, y) = x_K

of scalars x and y, for K = 10, 100, 1000, 10000. Each step uses x_k three times, so the
closed form of f written out as a tree has about 3**K leaves; symgrad works on the DAG,
so its forward and gradient programs grow linearly in K. For each K the table gives:

  grad_fn s    sg.grad_fn(f): tracing and the reverse sweep
  program s    g.program(): the printed straight-line program
  compile s    g.compile("numpy"): code generation plus Python's compile()
  total s      the sum of the three
  fwd ops      forward program statements            (g.op_counts()[0])
  grad ops     forward + gradient program statements (g.op_counts()[1])
  ratio        grad ops / fwd ops
  µs/call      median time of one call of the compiled NumPy gradient
  torch µs     median time of one float64 torch forward + torch.autograd.grad, for scale

The compiled gradient is checked against torch.autograd (same recurrence written with
torch.sin / torch.cos) at K = 10 and K = 100. sympy.diff of the closed form is timed at
small K in a subprocess with a 60 s limit.

    python bench/scaling.py            # K = 10, 100, 1000, 10000
    python bench/scaling.py --quick    # K = 10, 100, 1000

Exits non-zero if a gradient disagrees with torch.autograd; timings are only reported.
No sys.setrecursionlimit is needed: symgrad traces, differentiates and generates code
iteratively, and we never ask for the closed-form formulas (which would be ~3**K long).
"""
import argparse
import statistics
import subprocess
import sys
import textwrap
import time
import timeit

import numpy as np
import torch

import symgrad as sg

# x = 1.0, y = 1.2 is in the basin of an attracting fixed point of the recurrence
# (x* ~ 2.4502), so values and gradients stay finite for every K.
POINT = (1.0, 1.2)
CHECK_POINTS = [(1.0, 1.2), (0.5, 0.3), (2.0, 0.8)]
SYMPY_TIMEOUT = 60.0


def chain(K):
    def f(x, y):
        for _ in range(K):
            x = sg.sin(x) * x + sg.cos(y) * x
        return x
    f.__name__ = f"chain{K}"
    return f


def torch_chain(x, y, K):
    for _ in range(K):
        x = torch.sin(x) * x + torch.cos(y) * x
    return x


def torch_grad(x0, y0, K):
    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    y = torch.tensor(y0, dtype=torch.float64, requires_grad=True)
    return torch.autograd.grad(torch_chain(x, y, K), [x, y])


def per_call_us(fn, repeats=5):
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()            # calls per repeat, >= 0.2 s in total
    return statistics.median(timer.repeat(repeats, number)) / number * 1e6


def run(K):
    f = chain(K)
    t0 = time.perf_counter()
    g = sg.grad_fn(f)
    t1 = time.perf_counter()
    g.program()
    t2 = time.perf_counter()
    fn = g.compile("numpy")
    t3 = time.perf_counter()
    fwd, total = g.op_counts()
    us = per_call_us(lambda: fn(*POINT))
    torch_us = per_call_us(lambda: torch_grad(*POINT, K), repeats=3)
    return dict(K=K, grad_fn=t1 - t0, program=t2 - t1, compile=t3 - t2, total=t3 - t0,
                fwd=fwd, ops=total, ratio=total / fwd, us=us, torch_us=torch_us,
                g=g, fn=fn, value=fn(*POINT))


def verify(row):
    """The compiled gradient against torch.autograd at a few points; returns True if ok."""
    ok = True
    for x0, y0 in CHECK_POINTS:
        ours = np.array(row["fn"](x0, y0), dtype=np.float64)
        ref = np.array([t.item() for t in torch_grad(x0, y0, row["K"])])
        good = np.all(np.isfinite(ref)) and np.allclose(ours, ref, rtol=1e-9, atol=1e-12)
        ok &= bool(good)
        print(f"  K={row['K']:<4} at (x, y) = ({x0}, {y0}): symgrad (df/dx, df/dy) = "
              f"({ours[0]:.12g}, {ours[1]:.12g}), torch = ({ref[0]:.12g}, {ref[1]:.12g})  "
              f"{'ok' if good else 'MISMATCH'}")
    return ok


SYMPY_CODE = textwrap.dedent("""
    import sys, time
    import sympy
    K = int(sys.argv[1])
    x, y = sympy.symbols("x y", real=True)
    t0 = time.perf_counter()
    e = x
    for _ in range(K):
        e = sympy.sin(e) * e + sympy.cos(y) * e
    t1 = time.perf_counter()
    print("build", t1 - t0, flush=True)
    dx = sympy.diff(e, x)
    t2 = time.perf_counter()
    print("diff_x", t2 - t1, flush=True)
    dy = sympy.diff(e, y)
    t3 = time.perf_counter()
    print("diff_y", t3 - t2, flush=True)
""")


def time_sympy(K, timeout=SYMPY_TIMEOUT):
    """sympy.diff of the closed form w.r.t. x and y, in a subprocess killed after
    ``timeout`` seconds. Returns {"build": s, "diff_x": s, "diff_y": s} or None."""
    try:
        proc = subprocess.run([sys.executable, "-c", SYMPY_CODE, str(K)],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise RuntimeError(f"sympy subprocess failed:\n{proc.stderr}")
    return {k: float(v) for k, v in (line.split() for line in proc.stdout.splitlines())}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only K = 10, 100, 1000")
    args = parser.parse_args()
    Ks = [10, 100, 1000] if args.quick else [10, 100, 1000, 10000]

    print(f"symgrad {sg.__version__}, torch {torch.__version__}, numpy {np.__version__}, "
          f"Python {sys.version.split()[0]}")
    print("f(x, y) = x_K,  x_0 = x,  x_{k+1} = sin(x_k)*x_k + cos(y)*x_k;  "
          f"timed at (x, y) = {POINT}")
    run(3)  # warm-up: first-use costs (printer set-up, template caches) kept out of the table

    header = (f"{'K':>6} {'grad_fn s':>10} {'program s':>10} {'compile s':>10} {'total s':>9} "
              f"{'fwd ops':>8} {'grad ops':>9} {'ratio':>6} {'µs/call':>10} {'torch µs':>10}")
    print()
    print(header)
    print("-" * len(header))
    rows, ok = [], True
    for K in Ks:
        row = run(K)
        rows.append(row)
        print(f"{K:>6} {row['grad_fn']:>10.3f} {row['program']:>10.3f} {row['compile']:>10.3f} "
              f"{row['total']:>9.3f} {row['fwd']:>8} {row['ops']:>9} {row['ratio']:>6.2f} "
              f"{row['us']:>10.1f} {row['torch_us']:>10.1f}", flush=True)
        if K not in (10, 100):
            del row["g"], row["fn"]          # free the big graphs before the next K

    print()
    print("gradient at (x, y) = (1.0, 1.2) per K (df/dx decays like |h'(x*)|**K ~ 0.89**K):")
    for row in rows:
        print(f"  K={row['K']:<6} (df/dx, df/dy) = ({row['value'][0]:.6g}, {row['value'][1]:.6g})")

    print()
    print("compiled NumPy gradient vs torch.autograd (float64):")
    for row in rows:
        if row["K"] in (10, 100):
            ok &= verify(row)

    print()
    print(f"sympy.diff of the closed form (a tree with ~3**K leaves), subprocess, "
          f"{SYMPY_TIMEOUT:.0f} s limit:")
    for K in (5, 8, 10):
        t = time_sympy(K)
        if t is None:
            print(f"  K={K:<3} did not finish in {SYMPY_TIMEOUT:.0f} s")
        else:
            print(f"  K={K:<3} build {t['build']:.3f} s, diff w.r.t. x {t['diff_x']:.3f} s, "
                  f"w.r.t. y {t['diff_y']:.3f} s, total {sum(t.values()):.3f} s")
    k10 = next(r for r in rows if r["K"] == 10)
    print(f"  (symgrad at K=10: {k10['total']:.3f} s for grad_fn + program + compile)")

    print()
    if not ok:
        print("FAILED: compiled gradient disagrees with torch.autograd")
        sys.exit(1)
    print("OK: compiled gradients at K=10 and K=100 match torch.autograd")


if __name__ == "__main__":
    main()
