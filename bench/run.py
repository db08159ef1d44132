"""symgrad next to its peers: derive time, per-call time, op counts, gradient check.

One markdown table, one row per (problem, size, peer):

    derive s   from building the function to the first gradient returned (trace, reverse
               sweep, code generation or JIT/XLA/Numba compilation, first call); "-" for
               peers that derive nothing (torch eager, the hand-written gradient)
    µs/call    the fastest of repeated runs (each >= 0.05 s) of one gradient call on inputs
               already in the peer's own types (NumPy arrays, torch tensors, jax device
               arrays, Python floats); the fastest, as timeit advises, because on a shared
               VM a median still moves 2x between runs with the neighbours' load
    ops        forward/gradient op counts where the peer has them: symgrad's program
               statements (g.op_counts(): forward, forward+gradient), jaxpr equations,
               CasADi VM instructions (scalar ones for SX), PyTensor's compiled (fused) nodes
    × sg-np    per-call time over symgrad numpy's on the same problem and size
    vs torch   max |g - g_torch| / max |g_torch| over the gradients, against torch.autograd
               in float64 ("ok" under 1e-7)

Peers: torch eager autograd (float64, one thread), jax.jit(jax.grad) (x64), CasADi SX
(and MX for the array problems), PyTensor (pytensor.grad + pytensor.function in its default
Numba mode, falling back to C and saying so), SymPy (diff + lambdify with cse, "math"
module), a hand-written gradient, and symgrad's NumPy and torch backends.

Every cell runs in its own Python process pinned to one core (sched_setaffinity, core 1 by
default) with OMP/MKL/OPENBLAS/NUMBA threads = 1, XLA on one thread and torch.set_num_threads(1).
A cell's derivation is stopped after --cap seconds (--sympy-cap for SymPy) and reported as
"> cap"; a larger size of the same problem whose extrapolated derive time (linear in the
problem's scalar work, a lower bound for the peers that grow faster) exceeds the cap is
skipped and says so. CasADi SX is skipped above 3e6 scalar forward ops.

    pip install -r bench/requirements.txt
    python bench/run.py                          # everything, < 15 min on 2 cores
    python bench/run.py --quick                  # small sizes, < 2 min
    python bench/run.py --problems chain,mlp --peers torch,sg-numpy,jax --out results.md
"""
import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

HERE = Path(__file__).resolve().parent

PEERS = ("torch", "sg-numpy", "sg-torch", "numpy", "jax", "casadi-sx", "casadi-mx",
         "pytensor", "sympy")
LABEL = {"torch": "torch eager", "sg-numpy": "symgrad numpy", "sg-torch": "symgrad torch",
         "numpy": "hand-written", "jax": "jax.jit(grad)", "casadi-sx": "CasADi SX",
         "casadi-mx": "CasADi MX", "pytensor": "PyTensor", "sympy": "SymPy"}


def sg_backends():
    """The peers ``sg-<name>``, one per backend in symgrad's registry (numpy, torch, and
    c, numba, jax once they are registered), numpy and torch first."""
    sys.path.insert(0, str(HERE.parent))
    from symgrad.codegen.backends import BACKENDS
    names = ["numpy", "torch"] + sorted(set(BACKENDS) - {"numpy", "torch"})
    return [f"sg-{n}" for n in names if n in BACKENDS]


def all_peers():
    peers = list(PEERS)
    for p in sg_backends():
        if p not in peers:
            peers.insert(peers.index("numpy"), p)
    return peers


def label(peer, problem=None):
    import hessians as H
    if problem in H.PROBLEMS and H.label(peer, problem):
        return H.label(peer, problem)
    return LABEL.get(peer) or f"symgrad {peer[3:]}"


def module_of(problem):
    import hessians as H
    import problems as P
    return H if problem in H.PROBLEMS else P
MX_PROBLEMS = ("seed_simple", "seed_module", "rosenbrock", "mlp", "logreg", "attention")
SX_MAX_WORK = 3e6
TOLERANCE = 1e-7
THREAD_ENV = {
    "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
    "JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "1", "TF_CPP_MIN_LOG_LEVEL": "3",
}


# =====================================================================================
# One cell (runs in its own process)
# =====================================================================================

class CapExceeded(Exception):
    pass


def per_call_us(call, quick):
    """The fastest repeat's per-call µs; each repeat runs enough calls to last >= ~0.05 s."""
    t0 = time.perf_counter()
    call()
    t = time.perf_counter() - t0
    target, repeats = (0.02, 5) if quick else (0.05, 15)
    if t > 0.25:
        number, repeats = 1, 3
    else:
        number = max(1, int(target / max(t, 1e-7)))
    times = timeit.Timer(call).repeat(repeats, number)
    return min(times) / number * 1e6


def run_cell(spec):
    core = spec.get("core")
    if core is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {core})
        except OSError:
            pass
    import numpy as np
    sys.path.insert(0, str(HERE))
    M = module_of(spec["problem"])

    problem, params, peer = spec["problem"], spec["params"], spec["peer"]
    work = Path(spec["workdir"])
    with np.load(work / "inputs.npz") as z:
        inputs = {k: z[k] for k in spec["names"]}

    def on_alarm(signum, frame):
        raise CapExceeded()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(spec["cap"]))
    t0 = time.perf_counter()
    try:
        cell = M.builder(peer, problem)(problem, params, inputs)
    except CapExceeded:
        return {"status": "cap", "derive": time.perf_counter() - t0}
    finally:
        signal.alarm(0)
    grads = cell.to_numpy(cell.call())
    us = per_call_us(cell.call, spec.get("quick"))
    out = {"status": "ok", "derive": cell.derive, "us": us, "ops": cell.ops,
           "note": cell.note, "version": cell.version}
    ref_path = work / "ref.npz"
    if peer == "torch":
        np.savez(ref_path, *grads)
    elif ref_path.exists():
        with np.load(ref_path) as z:
            ref = [z[f"arr_{i}"] for i in range(len(z.files))]
        err = 0.0
        for g, r in zip(grads, ref):
            g = np.asarray(g, dtype=np.float64).reshape(r.shape)
            scale = max(float(np.max(np.abs(r))), 1e-30)
            e = float(np.max(np.abs(g - r))) / scale if r.size else 0.0
            err = max(err, e if np.isfinite(e) else float("inf"))
        out["err"] = err
    if "sg" in peer:
        import symgrad
        out["sg_path"] = str(Path(symgrad.__file__).parent)
        try:
            from symgrad.codegen import heap, threads
            out["threads"] = {**threads.settings(), **heap.settings()}
        except ImportError:
            pass
    return out


def cell_main(arg):
    spec = json.loads(arg)
    try:
        out = run_cell(spec)
    except Exception as e:  # noqa: BLE001 - every failure becomes a table entry
        msg = f"{type(e).__name__}: {e}".replace("\n", " ").replace("|", "/")
        out = {"status": "error", "error": msg[:160]}
    print("@@RESULT " + json.dumps(out), flush=True)


# =====================================================================================
# Driver
# =====================================================================================

def run_subprocess(spec, timeout):
    env = dict(os.environ, **THREAD_ENV)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--cell", json.dumps(spec)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"status": "cap", "killed": True, "wall": time.perf_counter() - t0}
    wall = time.perf_counter() - t0
    for line in proc.stdout.splitlines():
        if line.startswith("@@RESULT "):
            out = json.loads(line[len("@@RESULT "):])
            out["wall"] = wall
            return out
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"status": "error", "error": f"exit {proc.returncode}: {tail[:150]}", "wall": wall}


def fmt_s(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def fmt_us(v):
    if v is None:
        return ""
    if v < 10:
        return f"{v:.2f}"
    if v < 1000:
        return f"{v:.1f}"
    return f"{v:,.0f}"


def plan(args):
    sel = []
    for problem in args.problems:
        M = module_of(problem)
        for size, params in M.SIZES[problem]:
            if args.quick and size not in M.QUICK[problem]:
                continue
            sel.append((problem, size, params))
    return sel


def derive_scales_with_size(peer, problem):
    """Whether a peer's derive time grows with the problem's size: with the program's
    length (the chain) for every peer, with the arrays' sizes only for the peers that
    expand arrays into scalars (SymPy, CasADi SX); array-level peers derive the same
    graph for any size."""
    return problem == "chain" or peer in ("sympy", "casadi-sx")


def static_skip(peer, problem, params, args):
    import hessians as H
    M = module_of(problem)
    if M.builder(peer, problem) is None:
        return "omit"
    if peer == "casadi-mx" and problem not in MX_PROBLEMS + H.PROBLEMS:
        return "omit"
    if peer in ("pytensor", "sympy") and problem in H.PROBLEMS:
        return "omit"
    if peer == "casadi-sx" and M.work(problem, params) > SX_MAX_WORK:
        return (f"skipped: > cap (SX expands to ~{M.work(problem, params):.1e} scalar ops "
                f"before differentiation)")
    return None


def main():
    sys.path.insert(0, str(HERE))
    import numpy as np
    import hessians as H
    import problems as P

    PROBLEMS = P.PROBLEMS + H.PROBLEMS
    peers_all = all_peers()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes only (smoke test)")
    ap.add_argument("--problems", default=",".join(PROBLEMS),
                    help=f"comma list from {','.join(PROBLEMS)}")
    ap.add_argument("--peers", default=",".join(peers_all),
                    help=f"comma list from {','.join(peers_all)}")
    ap.add_argument("--out", help="also write the markdown to this file")
    ap.add_argument("--json", help="also write the raw results to this file")
    ap.add_argument("--cap", type=float, default=60.0, help="derive cap per cell, seconds")
    ap.add_argument("--sympy-cap", type=float, default=60.0, help="derive cap for SymPy")
    ap.add_argument("--core", type=int, default=None,
                    help="CPU to pin cells to (default 1, or the last allowed CPU)")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        cell_main(args.cell)
        return

    args.problems = [s for s in args.problems.split(",") if s]
    args.peers = [s for s in args.peers.split(",") if s]
    for s in args.problems:
        if s not in PROBLEMS:
            ap.error(f"unknown problem {s!r}")
    for s in args.peers:
        if s not in peers_all:
            ap.error(f"unknown peer {s!r}")
    if "torch" not in args.peers:
        print("note: without the torch peer there is no reference gradient to check against",
              file=sys.stderr)
    peers = [p for p in peers_all if p in args.peers]   # torch first: it writes the reference
    core = args.core
    if core is None and hasattr(os, "sched_getaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        core = 1 if 1 in allowed else allowed[-1]

    t_start = time.perf_counter()
    rows, versions, sg_path, thread_settings = [], {}, None, None
    history = {}              # (peer, problem) -> (work, derive s or None if over the cap)
    with tempfile.TemporaryDirectory(prefix="symgrad-bench-") as tmp:
        for problem, label, params in plan(args):
            M = module_of(problem)
            work = M.work(problem, params)
            cdir = Path(tmp) / f"{problem}-{label}".replace(" ", "_").replace("/", "_")
            cdir.mkdir()
            inputs = M.make_inputs(problem, params)
            np.savez(cdir / "inputs.npz", **inputs)
            for peer in peers:
                row = {"problem": problem, "size": label, "peer": peer}
                skip = static_skip(peer, problem, params, args)
                if skip == "omit":
                    continue
                cap = args.sympy_cap if peer == "sympy" else args.cap
                prev = history.get((peer, problem))
                if skip is None and prev is not None:
                    pwork, pderive = prev
                    if pderive is None:
                        skip = "skipped: > cap (a smaller size already exceeded it)"
                    elif derive_scales_with_size(peer, problem) and pderive * work / pwork > cap:
                        skip = (f"skipped: > cap (est. ≥ {pderive * work / pwork:.0f} s "
                                f"from {pderive:.2g} s at the smaller size)")
                if skip:
                    row.update(status="skip", note=skip)
                    rows.append(row)
                    print(f"  {problem:<10} {label:<16} {peer:<10} {skip}", file=sys.stderr)
                    continue
                spec = {"problem": problem, "params": params, "peer": peer,
                        "names": list(inputs), "workdir": str(cdir), "cap": cap,
                        "core": core, "quick": args.quick}
                res = run_subprocess(spec, timeout=cap + 30 + (60 if problem == "chain" else 0))
                row.update(res)
                rows.append(row)
                if res["status"] == "ok":
                    versions[peer] = res.get("version")
                    sg_path = res.get("sg_path", sg_path)
                    thread_settings = res.get("threads", thread_settings)
                    if res.get("derive") is not None:
                        history[(peer, problem)] = (work, res["derive"])
                elif res["status"] == "cap":
                    history[(peer, problem)] = (work, None)
                print(f"  {problem:<10} {label:<16} {peer:<10} {res['status']:<6} "
                      f"derive {fmt_s(res.get('derive')):>7} s  {fmt_us(res.get('us')):>10} µs  "
                      f"wall {res.get('wall', 0):.1f} s  {res.get('error', '')}",
                      file=sys.stderr, flush=True)
    total = time.perf_counter() - t_start

    md = render(rows, versions, sg_path, args, core, total, thread_settings)
    print(md)
    if args.out:
        Path(args.out).write_text(md + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


def render(rows, versions, sg_path, args, core, total, thread_settings=None):
    import numpy as np
    sgnp = {(r["problem"], r["size"]): r.get("us") for r in rows
            if r["peer"] == "sg-numpy" and r.get("status") == "ok"}
    out = []
    vers = ", ".join(f"{label(k)} {v}" for k, v in versions.items()
                     if v and not (k.startswith("sg-") and k != "sg-numpy"))
    out.append(f"Python {platform.python_version()}, NumPy {np.__version__}; {vers}. "
               f"symgrad from {sg_path}. Each cell: own process, pinned to CPU {core}, "
               f"one thread. Derive cap {args.cap:.0f} s (SymPy {args.sympy_cap:.0f} s). "
               f"Total wall time {total / 60:.1f} min. Load average at the end "
               f"{os.getloadavg()[0]:.2f}.")
    out.append("")
    env = ", ".join(f"{k}={v}" for k, v in THREAD_ENV.items() if k.endswith("THREADS"))
    out.append(f"Threads: every cell runs with {env}; symgrad's BLAS setting in its cells "
               f"(codegen/threads.py): {json.dumps(thread_settings, ensure_ascii=False)}.")
    out.append("")
    out.append("| problem | size | peer | derive s | µs/call | ops fwd/grad | × sg-np | "
               "vs torch | note |")
    out.append("|---|---|---|---:|---:|---:|---:|---|---|")
    for r in rows:
        st = r.get("status")
        derive = us = ops = ratio = check = ""
        note = r.get("note") or ""
        if st == "ok":
            derive = fmt_s(r.get("derive"))
            us = fmt_us(r["us"])
            ops = r.get("ops") or ""
            base = sgnp.get((r["problem"], r["size"]))
            if base:
                ratio = f"{r['us'] / base:.2f}"
            if r["peer"] == "torch":
                check = "(reference)"
            elif "err" in r:
                check = (f"ok ({r['err']:.0e})" if r["err"] <= TOLERANCE
                         else f"**NO** ({r['err']:.1e})")
            else:
                check = "no reference"
        elif st == "cap":
            derive = (f"> {args.sympy_cap if r['peer'] == 'sympy' else args.cap:.0f}")
            note = "derive over the cap" + (" (killed)" if r.get("killed") else "")
        elif st == "error":
            note = "error: " + r.get("error", "")
        out.append(f"| {r['problem']} | {r['size']} | {label(r['peer'], r['problem'])} | "
                   f"{derive} | {us} | "
                   f"{ops} | {ratio} | {check} | {note} |")
    out.append("")
    out += wide(rows)
    out.append("")
    out += targets(rows)
    return "\n".join(out)


WIDE = {"torch": "torch (eager / torch.func)", "jax": "JAX jit", "numpy": "hand NumPy"}


def wide(rows):
    """µs per call, one row per problem and size, one column per peer (every symgrad
    backend its own column), the best per row in bold; checks that failed are marked."""
    peers = [p for p in all_peers() if any(r["peer"] == p for r in rows)]
    sizes = []
    for r in rows:
        if (r["problem"], r["size"]) not in sizes:
            sizes.append((r["problem"], r["size"]))
    cells = {(r["problem"], r["size"], r["peer"]): r for r in rows}
    out = ["µs per call (best in bold; derive s in the long table):", "",
           "| problem | " + " | ".join(WIDE.get(p) or label(p) for p in peers) + " |",
           "|---|" + "---:|" * len(peers)]
    for problem, size in sizes:
        ok = {p: cells[(problem, size, p)]["us"] for p in peers
              if cells.get((problem, size, p), {}).get("status") == "ok"
              and cells[(problem, size, p)].get("err", 0) <= TOLERANCE}
        best = min(ok.values()) if ok else None
        row = []
        for p in peers:
            r = cells.get((problem, size, p))
            if r is None:
                row.append("")
            elif r.get("status") != "ok":
                row.append("—")
            elif p not in ok:
                row.append(f"{fmt_us(r['us'])} (wrong)")
            else:
                row.append(f"**{fmt_us(r['us'])}**" if r["us"] == best else fmt_us(r["us"]))
        out.append(f"| {problem} {size} | " + " | ".join(row) + " |")
    return out


def targets(rows):
    """The issue 6 targets, read off the table."""
    R = {(r["problem"], r["size"], r["peer"]): r for r in rows if r.get("status") == "ok"}

    def get(problem, size, peer, key="us"):
        r = R.get((problem, size, peer))
        return None if r is None else r.get(key)

    lines = ["Targets (issues 6 and 18):", "", "| target | figure | met |", "|---|---|---|"]

    def add(name, fig, ok):
        lines.append(f"| {name} | {fig} | {'n/a' if ok is None else ('yes' if ok else '**no**')} |")

    for K, lim in (("K=1000", 0.5), ("K=10000", 5.0)):
        d = get("chain", K, "sg-numpy", "derive")
        add(f"chain {K} derived + compiled < {lim} s", "not run" if d is None else f"{d:.2f} s",
            None if d is None else d < lim)
    sizes = sorted({(r["problem"], r["size"]) for r in rows}, key=lambda t: rows.index(
        next(r for r in rows if (r["problem"], r["size"]) == t)))
    for problem, size in sizes:
        if problem in ("rosenbrock", "mlp", "logreg"):
            a, b = get(problem, size, "sg-numpy"), get(problem, size, "numpy")
            if a and b:
                add(f"{problem} {size}: symgrad numpy ≤ 1.2× hand-written",
                    f"{a / b:.2f}× ({fmt_us(a)} vs {fmt_us(b)} µs)", a / b <= 1.2)
    small = [("chain", "K=10"), ("chain", "K=100"), ("rosenbrock", "n=10"),
             ("mlp", "16/16/16 b8")]
    for problem, size in small:
        a, t = get(problem, size, "sg-numpy"), get(problem, size, "torch")
        if a and t:
            add(f"{problem} {size}: symgrad numpy ≥ 5× faster than torch eager",
                f"{t / a:.1f}× ({fmt_us(a)} vs {fmt_us(t)} µs)", t / a >= 5)
    a, t = get("mlp", "256/256/10 b128", "sg-torch"), get("mlp", "256/256/10 b128", "torch")
    if a and t:
        add("mlp 256/256/10 b128: symgrad torch not slower than torch eager",
            f"{a / t:.2f}× ({fmt_us(a)} vs {fmt_us(t)} µs)", a <= t)
    worst = None
    for (problem, size, peer), r in R.items():
        if peer == "sg-numpy" and r.get("ops"):
            f, g = (int(v) for v in r["ops"].split("/"))
            if worst is None or g / f > worst[0]:
                worst = (g / f, problem, size, f, g)
    if worst:
        add("gradient program ≤ 3× forward ops (every problem)",
            f"worst {worst[0]:.2f}× ({worst[1]} {worst[2]}: {worst[3]}/{worst[4]})",
            worst[0] <= 3)
    lines += issue18_targets(R, sizes, get, add)
    return lines


PEER_KINDS = ("torch", "jax", "casadi-sx", "casadi-mx", "pytensor", "sympy")


def issue18_targets(R, sizes, get, add):
    """Issue 18: symgrad's best backend at or below the best peer per row; chain K=1000
    derived faster than CasADi SX; Hessian rows within 1.1× of hand-written NumPy and ≥ 3×
    faster than JAX."""
    import hessians as H

    def best(problem, size, which):
        found = [(r["us"], peer) for (pr, sz, peer), r in R.items()
                 if pr == problem and sz == size and which(peer)
                 and r.get("err", 0) <= TOLERANCE]
        return min(found) if found else None

    for problem, size in sizes:
        ours = best(problem, size, lambda p: p.startswith("sg-"))
        peer = best(problem, size, lambda p: p in PEER_KINDS)
        if ours and peer:
            add(f"{problem} {size}: best symgrad ({label(ours[1], problem)}) ≤ best peer "
                f"({label(peer[1], problem)})",
                f"{fmt_us(ours[0])} vs {fmt_us(peer[0])} µs ({ours[0] / peer[0]:.2f}×)",
                ours[0] <= peer[0])
    d, c = get("chain", "K=1000", "sg-numpy", "derive"), get("chain", "K=1000", "casadi-sx",
                                                               "derive")
    if d and c:
        add("chain K=1000 derived + compiled (numpy) faster than CasADi SX",
            f"{d:.3f} s vs {c:.3f} s", d < c)
    for problem, size in sizes:
        if problem not in H.PROBLEMS:
            continue
        ours = best(problem, size, lambda p: p.startswith("sg-"))
        hand, jax = get(problem, size, "numpy"), get(problem, size, "jax")
        if ours and hand:
            add(f"{problem} {size}: symgrad within 1.1× of hand-written NumPy",
                f"{ours[0] / hand:.2f}× ({fmt_us(ours[0])} vs {fmt_us(hand)} µs)",
                ours[0] <= 1.1 * hand)
        if ours and jax:
            add(f"{problem} {size}: symgrad ≥ 3× faster than JAX's jit",
                f"{jax / ours[0]:.1f}× ({fmt_us(ours[0])} vs {fmt_us(jax)} µs)",
                jax >= 3 * ours[0])
    return []


if __name__ == "__main__":
    main()
