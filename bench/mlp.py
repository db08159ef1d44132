"""Per-call time of symgrad's compiled MLP gradient against torch.autograd and hand-written NumPy.

    python bench/mlp.py                 # both sizes, about 30 s
    python bench/mlp.py --rounds 151    # more rounds on a noisy machine
    python bench/mlp.py --no-fresh      # shared-process measurements only, about 15 s
    python bench/mlp.py --source        # also print the generated NumPy source

The function is bench/problems.py's ``mlp`` (the same model as examples/mlp.py, with the weights
stored as (in, out) so there is no transpose in the forward pass):

    f(W1, b1, W2, b2, X, Y) = mean((tanh(X @ W1 + b1) @ W2 + b2 - Y)**2)

with the biases broadcast over the batch, differentiated with respect to W1, b1, W2, b2 at
(d = h = o = 16, batch 8) and (d = h = 256, o = 10, batch 128). The four contenders are built by
bench/problems.py's builders (the same code bench/run.py times):

    torch autograd   float64 forward + torch.autograd.grad every call, one thread
    symgrad numpy    sg.grad_fn(...).compile("numpy") with symbolic dims, NumPy arrays in
    symgrad torch    sg.grad_fn(...).compile("torch"), float64 tensors in
    hand numpy       problems.hand_mlp: forward, dO, dZ = (dO W2ᵀ)∘(1 - H²), four products/sums

Every gradient is checked against torch.autograd before anything is timed (the script exits 1
on a mismatch). The process pins itself to one core (--core, default 1) and every library to one
thread. Timing is interleaved: each round times every contender once for about --block seconds
(a whole number of calls), in a rotating order, and the table reports the median per-call time
over the rounds (and the fastest round), so drift in the machine's load hits all contenders alike.

Each size is measured twice, because at the large size the result depends on the state of the
C heap: "shared process" times the four contenders interleaved in this process (torch and
everything else already loaded); "fresh process" (skip with --no-fresh) times each contender
in a new process that loads only what it needs (a NumPy-only program for the hand-written and
symgrad numpy contenders), checked against the torch gradient saved by the parent. The
"faults" column is minor page faults per call (getrusage): when glibc hands freed 256 KB
temporaries back to the OS between calls, every call faults their pages in again, which
costs more than the arithmetic at 256/256/10 b128.
"""
import os

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS",
           "VECLIB_MAXIMUM_THREADS"):
    os.environ[_k] = "1"          # before NumPy/torch load their BLAS

import argparse                   # noqa: E402
import json                       # noqa: E402
import resource                   # noqa: E402
import statistics                 # noqa: E402
import subprocess                 # noqa: E402
import sys                        # noqa: E402
import tempfile                   # noqa: E402
import time                       # noqa: E402
from pathlib import Path          # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np                # noqa: E402

import problems as P              # noqa: E402

PEERS = ("torch", "sg-numpy", "sg-torch", "numpy")
LABEL = {"torch": "torch autograd", "sg-numpy": "symgrad numpy", "sg-torch": "symgrad torch",
         "numpy": "hand numpy"}
TOLERANCE = 1e-10          # max |g - g_torch| / max |g_torch|, per gradient, float64
SMALL = P.SIZES["mlp"][0][0]


def pin(core):
    if core is None or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if core not in allowed:
        core = allowed[-1]
    os.sched_setaffinity(0, {core})
    return core


def rel_err(grads, ref):
    err = 0.0
    for g, r in zip(grads, ref):
        g = np.asarray(g, dtype=np.float64)
        if g.shape != r.shape:
            return float("inf")
        e = float(np.max(np.abs(g - r))) / max(float(np.max(np.abs(r))), 1e-300)
        err = max(err, e if np.isfinite(e) else float("inf"))
    return err


def calls_per_block(call, block):
    """Number of calls that take about ``block`` seconds (at least 1)."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        t = time.perf_counter() - t0
        if t >= block / 4 or n >= 1 << 20:
            return max(1, round(n * block / max(t, 1e-9)))
        n *= 4


def minflt():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def time_interleaved(calls, rounds, block):
    """{name: (median per-call s, fastest round's per-call s, minor page faults per call)};
    each round times every call once, in a rotating order."""
    numbers = {k: calls_per_block(c, block) for k, c in calls.items()}
    names = list(calls)
    times = {k: [] for k in names}
    faults = dict.fromkeys(names, 0)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            call, n = calls[k], numbers[k]
            f0 = minflt()
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            times[k].append((time.perf_counter() - t0) / n)
            faults[k] += minflt() - f0
    return {k: (statistics.median(times[k]), min(times[k]), faults[k] / (rounds * numbers[k]))
            for k in names}


def fmt_us(s):
    us = s * 1e6
    return f"{us:,.0f}" if us >= 1000 else f"{us:.1f}"


def check(label, peer, cell, ref):
    """Relative error of the contender's gradient against torch's; exits 1 on a mismatch."""
    err = rel_err(cell.to_numpy(cell.call()), ref)
    if not err <= TOLERANCE:
        print(f"{label}: {LABEL[peer]} gradient differs from torch.autograd: "
              f"rel. error {err:.2e} > {TOLERANCE:g}", file=sys.stderr)
        sys.exit(1)
    return err


def run_cell(spec):
    """One contender in this (fresh) process: build, check against the saved reference,
    time. Prints one JSON line."""
    pin(spec["core"])
    if spec["peer"] in ("torch", "sg-torch"):
        import torch
        torch.set_num_threads(1)
    label = spec["label"]
    params = dict(P.SIZES["mlp"])[label]
    cell = P.BUILDERS[spec["peer"]]("mlp", params, P.make_inputs("mlp", params))
    with np.load(spec["ref"]) as z:
        ref = [z[f"arr_{i}"] for i in range(len(z.files))]
    err = check(label, spec["peer"], cell, ref)
    med, best, flt = time_interleaved({spec["peer"]: cell.call}, spec["rounds"],
                                      spec["block"])[spec["peer"]]
    print("@@ " + json.dumps({"med": med, "best": best, "faults": flt, "err": err}))


def run_fresh(label, ref, args, core):
    out = {}
    with tempfile.TemporaryDirectory(prefix="symgrad-mlp-") as tmp:
        path = os.path.join(tmp, "ref.npz")
        np.savez(path, *ref)
        for peer in PEERS:
            spec = {"label": label, "peer": peer, "ref": path, "core": core,
                    "rounds": args.rounds, "block": args.block}
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--cell",
                                   json.dumps(spec)], capture_output=True, text=True)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@ ")]
            if proc.returncode or not lines:
                sys.stderr.write(proc.stderr)
                sys.exit(proc.returncode or 1)
            r = json.loads(lines[-1][3:])
            out[peer] = (r["med"], r["best"], r["faults"])
    return out


def print_table(title, res, errs, derive):
    med = {k: v[0] for k, v in res.items()}
    print(f"  {title}")
    print(f"    {'':<15} {'µs/call':>9} {'best':>9} {'÷ hand':>7} {'torch ÷':>8} "
          f"{'faults':>7} {'derive s':>9}  vs torch.autograd")
    for k in PEERS:
        m, best, flt = res[k]
        chk = "(reference)" if k == "torch" else f"ok ({errs[k]:.0e})"
        d = "-" if derive.get(k) is None else f"{derive[k]:.3f}"
        print(f"    {LABEL[k]:<15} {fmt_us(m):>9} {fmt_us(best):>9} "
              f"{m / med['numpy']:>6.2f}x {med['torch'] / m:>7.2f}x {flt:>7.0f} {d:>9}  {chk}")
    noisy = [LABEL[k] for k, v in res.items() if v[0] > 1.25 * v[1]]
    if noisy:
        print(f"    note: median > 1.25x the best round for {', '.join(noisy)}: the core was "
              f"busy with other work; rerun when it is idle (or pick another --core)")


def run_size(label, params, args, core):
    inputs = P.make_inputs("mlp", params)
    cells = {peer: P.BUILDERS[peer]("mlp", params, inputs) for peer in PEERS}
    ref = [np.asarray(g, dtype=np.float64) for g in cells["torch"].to_numpy(cells["torch"].call())]
    errs = {peer: check(label, peer, cells[peer], ref) for peer in PEERS[1:]}
    derive = {k: c.derive for k, c in cells.items()}
    print(f"\n{label}  (d={params['d']}, hidden={params['h']}, out={params['o']}, "
          f"batch={params['B']})")
    shared = time_interleaved({k: c.call for k, c in cells.items()}, args.rounds, args.block)
    print_table("shared process (interleaved)", shared, errs, derive)
    out = {"shared": shared}
    if args.fresh:
        fresh = run_fresh(label, ref, args, core)
        print_table("fresh process per contender", fresh, errs, {})
        out["fresh"] = fresh
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=51, help="timing rounds (median)")
    ap.add_argument("--block", type=float, default=0.01,
                    help="seconds per contender per round (a whole number of calls)")
    ap.add_argument("--core", type=int, default=1, help="CPU to pin to (-1: do not pin)")
    ap.add_argument("--sizes", default="small,large", help="comma list from small,large")
    ap.add_argument("--no-fresh", dest="fresh", action="store_false",
                    help="skip the fresh-process measurements")
    ap.add_argument("--source", action="store_true", help="print the generated NumPy source")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        run_cell(json.loads(args.cell))
        return

    core = pin(None if args.core < 0 else args.core)
    import torch
    import symgrad as sg
    torch.set_num_threads(1)
    print(f"MLP gradient per call, float64, CPU {core if core is not None else 'unpinned'}, "
          f"one thread; median of {args.rounds} rounds of ~{args.block:g} s each.")
    print(f"Python {sys.version.split()[0]}, NumPy {np.__version__}, torch {torch.__version__}, "
          f"symgrad {getattr(sg, '__version__', '?')}. 'derive s' = grad_fn + compile + first "
          f"call; 'faults' = minor page faults per call. Gradients checked against "
          f"torch.autograd (rel. error ≤ {TOLERANCE:g}).")
    if args.source:
        f, shapes, wrt = P.sg_function("mlp", {})
        print("\n" + sg.grad_fn(f, wrt=wrt, shapes=shapes).source("numpy"))

    want = {s.strip() for s in args.sizes.split(",") if s.strip()}
    results = {}
    for (label, params), key in zip(P.SIZES["mlp"], ("small", "large")):
        if key in want:
            results[label] = run_size(label, params, args, core)

    print("\nIssue 3 targets (shared process" + (" / fresh process" if args.fresh else "") + "):")

    def verdict(vals, ok):
        figs = " / ".join(f"{v:.2f}x" for v in vals)
        return figs, " / ".join("met" if ok(v) else "MISSED" for v in vals)

    for label, res in results.items():
        figs, word = verdict([r["sg-numpy"][0] / r["numpy"][0] for r in res.values()],
                             lambda v: v <= 1.2)
        print(f"  {label}: symgrad numpy / hand numpy = {figs} (target ≤ 1.2x)  {word}")
    if SMALL in results:
        figs, word = verdict([r["torch"][0] / r["sg-numpy"][0] for r in results[SMALL].values()],
                             lambda v: v >= 5)
        print(f"  {SMALL}: torch autograd / symgrad numpy = {figs} (target ≥ 5x)  {word}")


if __name__ == "__main__":
    main()
