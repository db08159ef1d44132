"""PyTorch's OpInfo database as a conformance walk: every OpInfo variant that supports
autograd in float64, every one of torch's own sample inputs (0-d and zero-size ones too),
traced through symgrad's torch front end as ``f(tensors) = Σ_k sum(out_k * w_k)`` (after the
sample's ``output_process_fn_grad``). The compiled NumPy gradient (order 1) and
Hessian-vector product (order 2) are compared with torch.autograd in float64. At order 2 a
variant is ``n/a`` where torch has no double backward or its OpInfo marks its own as an
expected failure, and at order 1 a variant whose torch gradient OpInfo marks failing may
match central differences of torch's forward instead; where torch's first derivative has no graph (a once-differentiable
kernel) the reference is central differences of it; an element where torch's second
derivative is nan (0 * inf at a point where the function is not twice differentiable) is
not compared, as in the fuzzer's ``singular`` class. Each variant is classed:

* ``pass``: every sample traced and matched;
* ``partial``: some samples matched, the others were refused;
* ``refused``: an UnsupportedOpError, naming the op and showing the sg.Function escape
  hatch, for every sample;
* ``crash``: any other exception, or a refusal without the escape hatch;
* ``wrong``: a gradient differs from torch's.

    python -m tests.conformance.opinfo                              # summary, orders 1 and 2
    python -m tests.conformance.opinfo --report docs/conformance.md # the committed report
    python -m tests.conformance.opinfo --only roll,linalg.svd --order 1

Needs ``expecttest`` (torch's test helpers import it). ``test_opinfo.py`` runs every
variant at both orders in the default test run and compares with the committed report.
"""
import argparse
import copy
import inspect
import signal
import sys
import time
import warnings
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

import symgrad as sg

D = torch.float64


class Timeout(Exception):
    pass


@contextmanager
def time_limit(seconds):
    def fail(*_):
        raise Timeout(f"no result after {seconds} s")
    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def variants():
    from torch.testing._internal.common_methods_invocations import op_db
    return [o for o in op_db if o.supports_autograd and D in o.supported_dtypes("cpu")]


def _leaves(value, out):
    """The float tensors of a sample's input/args/kwargs, in order."""
    if isinstance(value, torch.Tensor):
        if value.is_floating_point() and value.requires_grad:
            out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _leaves(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _leaves(v, out)
    return out


def _replace(value, table):
    if isinstance(value, torch.Tensor):
        return table.get(id(value), value)
    if isinstance(value, list):
        return [_replace(v, table) for v in value]
    if isinstance(value, tuple):
        return tuple(_replace(v, table) for v in value)
    if isinstance(value, dict):
        return {k: _replace(v, table) for k, v in value.items()}
    return value


def _outputs(out):
    flat = []
    if isinstance(out, (list, tuple)):
        for o in out:
            flat += _outputs(o)
    elif hasattr(out, "shape") and (not isinstance(out, torch.Tensor) or
                                   out.is_floating_point()):
        flat.append(out)
    return flat


def _call(op, args, kwargs):
    """``op(*args, **kwargs)``; an unbound method of torch's C tensor type
    (``torch.Tensor.__radd__``, ``.cdouble``) is called as the method of its first
    argument, which is what user code does (``2 + x``, ``x.cdouble()``)."""
    owner = getattr(op, "__objclass__", None)
    if owner is not None and issubclass(torch.Tensor, owner) and \
            not isinstance(args[0], torch.Tensor):
        return getattr(args[0], op.__name__)(*args[1:], **kwargs)
    return op(*args, **kwargs)


def _run(opinfo, sample, table):
    args = _replace([sample.input, list(sample.args), sample.kwargs], table)
    out = _call(opinfo.op, [args[0], *args[1]], args[2])
    return _outputs(sample.output_process_fn_grad(out))


def _directions(leaves):
    return [torch.linspace(0.5, -0.8, t.numel(), dtype=D).reshape(t.shape)
            if t.numel() > 1 else torch.full(tuple(t.shape), 0.3, dtype=D) for t in leaves]


def _ours(opinfo, sample, leaves, weights, order):
    """symgrad's gradient (order 1) or Hessian-vector product (order 2), compiled NumPy."""
    directions = _directions(leaves)

    def loss(*xs):
        table = {id(t): x for t, x in zip(leaves, xs)}
        total = 0
        for o, w in zip(_run(opinfo, sample, table), weights):
            total = total + (o * w).sum()
        return total

    def second(*xs):
        grads = sg.grad(loss(*xs), list(xs), allow_unused=True, materialize_grads=True)
        total = 0
        for g, v in zip(grads, directions):
            total = total + (g * v).sum()
        return total

    f = loss if order == 1 else second
    names = [f"x{k}" for k in range(len(leaves))]
    f.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    f.__name__ = opinfo.name.replace(".", "_")
    g = sg.grad_fn(f, shapes={n: tuple(t.shape) for n, t in zip(names, leaves)})
    return g.compile("numpy")(*[t.detach().numpy() for t in leaves])


def _torch_gradient(opinfo, sample, leaves, weights, values, create_graph=False):
    """torch.autograd's gradient of the loss at ``values`` (None when the loss does not
    depend on them), and the leaves it was taken at."""
    xs = [v.detach().clone().requires_grad_() for v in values]
    table = {id(t): x for t, x in zip(leaves, xs)}
    total = 0
    for o, w in zip(_run(opinfo, sample, table), weights):
        total = total + (o * w).sum()
    if not isinstance(total, torch.Tensor) or not total.requires_grad:
        return xs, None
    return xs, torch.autograd.grad(total, xs, allow_unused=True, materialize_grads=True,
                                   create_graph=create_graph)


FD_STEP = 1e-6


def _torch(opinfo, sample, leaves, weights, order):
    """torch's gradient (order 1) or Hessian-vector product (order 2), and how it was
    taken: "autograd", or "differences" when torch's first derivative has no graph or its
    double backward raises (a once-differentiable kernel: ctc_loss, the chunked
    linear_cross_entropy, flash attention on CPU), where the product is central
    differences of torch's own first derivative along the direction."""
    xs, grads = _torch_gradient(opinfo, sample, leaves, weights, leaves, order == 2)
    if grads is None or order == 1:
        return grads, "autograd"
    directions = _directions(leaves)
    total = sum((g * v).sum() for g, v in zip(grads, directions))
    if total.requires_grad:
        try:
            return torch.autograd.grad(total, xs, allow_unused=True,
                                       materialize_grads=True), "autograd"
        except RuntimeError:
            pass
    with torch.no_grad():
        plus = [x + FD_STEP * v for x, v in zip(leaves, directions)]
        minus = [x - FD_STEP * v for x, v in zip(leaves, directions)]
    _, up = _torch_gradient(opinfo, sample, leaves, weights, plus)
    _, down = _torch_gradient(opinfo, sample, leaves, weights, minus)
    return [(a - b) / (2 * FD_STEP) for a, b in zip(up, down)], "differences"


def _in_float64(sample, leaves):
    """The sample with its differentiable leaves in float64: a few samples of a float64
    variant pass a float32 tensor (cov's aweights), whose torch gradient is then only
    float32-accurate; the comparison is a float64 one."""
    table = {id(t): t.detach().to(D).requires_grad_() for t in leaves if t.dtype != D}
    sample = copy.copy(sample)
    sample.input, args, sample.kwargs = _replace(
        [sample.input, list(sample.args), sample.kwargs], table)
    sample.args = tuple(args)
    return sample, _leaves([sample.input, list(sample.args), sample.kwargs], [])


def check_sample(opinfo, sample, order=1):
    """None when symgrad matches torch on this sample, else (class, detail)."""
    leaves = _leaves([sample.input, list(sample.args), sample.kwargs], [])
    if not leaves:
        return None
    if any(t.dtype != D for t in leaves):
        sample, leaves = _in_float64(sample, leaves)
    with torch.no_grad():
        ref_out = _run(opinfo, sample, {})
    weights = [torch.linspace(-1.0, 1.5, o.numel(), dtype=D).reshape(o.shape)
               if o.numel() > 1 else torch.full(tuple(o.shape), 0.7, dtype=D)
               for o in ref_out]
    try:
        ours = _ours(opinfo, sample, leaves, weights, order)
    except sg.UnsupportedOpError as e:
        text = str(e)
        if "sg.Function" not in text:
            return "crash", f"refusal without the sg.Function escape hatch: {text[:120]}"
        return "refused", text.split("\n\nWhat to do")[0][:160]
    except Timeout:
        raise
    except Exception as e:  # noqa: BLE001 - a crash is a finding
        return "crash", f"{type(e).__name__}: {str(e)[:150]}"
    ref, how = _torch(opinfo, sample, leaves, weights, order)
    if ref is None:
        return None
    problem = _differ(ours, ref, how, order)
    if problem and order == 1 and torch_marks_failing(opinfo, "test_fn_grad"):
        problem = _differ(ours, _forward_differences(opinfo, sample, leaves, weights),
                          "differences", order)
    return ("wrong", problem) if problem else None


def _forward_differences(opinfo, sample, leaves, weights):
    """The gradient by central differences of torch's forward values, element by element:
    the reference where torch's OpInfo marks its own gradient as an expected failure
    (as_strided_scatter)."""
    def loss(values):
        table = {id(t): v for t, v in zip(leaves, values)}
        with torch.no_grad():
            return float(sum((o * w).sum() for o, w in zip(_run(opinfo, sample, table),
                                                          weights)))
    base = [t.detach().clone() for t in leaves]
    grads = []
    for k, t in enumerate(base):
        g = torch.zeros_like(t).reshape(-1)
        for i in range(t.numel()):
            step = torch.zeros_like(t).reshape(-1)
            step[i] = FD_STEP
            up = [b + step.reshape(t.shape) if j == k else b for j, b in enumerate(base)]
            down = [b - step.reshape(t.shape) if j == k else b for j, b in enumerate(base)]
            g[i] = (loss(up) - loss(down)) / (2 * FD_STEP)
        grads.append(g.reshape(t.shape))
    return grads


def _differ(ours, ref, how, order):
    """None when ``ours`` matches ``ref`` (taken by autograd or by differences), else
    what differs."""
    for k, (o, r) in enumerate(zip(ours, ref)):
        o = np.asarray(o, dtype=float)
        r = r.detach().numpy(force=True)
        rtol, atol = (1e-6, 1e-8) if how == "autograd" else (
            1e-4, 1e-5 * max(1.0, float(np.nanmax(np.abs(r), initial=0.0))))
        if order == 2 and o.shape == r.shape:
            o = np.where(np.isnan(r), np.nan, o)   # torch's 0 * inf: a singular point
        if o.shape != r.shape or not np.allclose(o, r, rtol=rtol, atol=atol, equal_nan=True):
            return f"d/dx{k}: shapes {o.shape}/{r.shape}" if o.shape != r.shape \
                else f"d/dx{k}: max error {np.nanmax(np.abs(o - r)):.3g}"
    return None


def torch_marks_failing(opinfo, test_name):
    """Whether torch's OpInfo marks ``test_name`` of TestBwdGradients as an expected
    failure (or skips it) on the CPU in float64: torch's own reference is then known bad."""
    for info in list(opinfo.decorators) + list(opinfo.skips):
        if getattr(info, "cls_name", None) != "TestBwdGradients" or \
                info.test_name != test_name or info.device_type not in (None, "cpu") or \
                (info.dtypes is not None and D not in info.dtypes) or \
                not getattr(info, "active_if", True):
            continue
        names = [getattr(d, "__name__", "") for d in info.decorators]
        if "expectedFailure" in names or "skip" in str(info.decorators):
            return True
    return False


def variant_name(opinfo):
    return opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


def classify(opinfo, order=1, samples=None, timeout=120):
    """The class of one variant (pass/partial/refused/crash/wrong, or n/a at order 2 when
    torch has no double backward for it) and a detail from its first failing sample."""
    if order == 2 and not opinfo.supports_gradgrad:
        return "n/a", "torch has no double backward"
    if order == 2 and torch_marks_failing(opinfo, "test_fn_gradgrad"):
        return "n/a", "torch's OpInfo marks its own second derivative as failing here"
    results = []
    try:
        with time_limit(timeout), warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            for k, sample in enumerate(opinfo.sample_inputs("cpu", D, requires_grad=True)):
                if samples is not None and k >= samples:
                    break
                results.append(check_sample(opinfo, sample, order))
    except Timeout as e:
        results.append(("crash", f"timeout: {e}"))
    except Exception as e:  # noqa: BLE001 - sample generation itself failed
        results.append(("crash", f"{type(e).__name__}: {str(e)[:150]}"))
    bad = [r for r in results if r is not None]
    kinds = {r[0] for r in bad}
    if not bad:
        return "pass", ""
    for kind in ("wrong", "crash"):
        if kind in kinds:
            return kind, next(r[1] for r in bad if r[0] == kind)
    if len(bad) < len(results):
        return "partial", bad[0][1]
    return "refused", bad[0][1]


CLASSES = ("pass", "partial", "refused", "crash", "wrong", "n/a")


def summary(counts):
    return ", ".join(f"{k} {counts[k]}" for k in CLASSES if counts[k])


def write_report(path, rows, orders, samples, seconds):
    """The committed markdown table: one row per variant, one class column per order."""
    total = len(rows)
    lines = ["# symgrad against PyTorch's OpInfo database", "",
             f"Generated by `python -m tests.conformance.opinfo --report {path}` "
             f"(torch {torch.__version__}, symgrad {sg.__version__}, "
             f"{'all' if samples is None else f'up to {samples}'} samples per variant, "
             f"{seconds:.0f} s). Every OpInfo variant that supports autograd in float64 is "
             "traced through symgrad's torch front end as f = sum_k sum(out_k * w_k); the "
             "compiled NumPy gradient (order 1) and Hessian-vector product (order 2, where "
             "torch has a double backward) are compared with torch.autograd. "
             "`tests/conformance/test_opinfo.py` checks every row of this table.", ""]
    for order in orders:
        counts = Counter(r[order][0] for r in rows)
        judged = total - counts["n/a"]
        lines.append(f"- order {order}: {summary(counts)}; pass rate "
                     f"{counts['pass']}/{judged} = {100 * counts['pass'] / max(judged, 1):.1f}%")
    lines += ["", "| variant | " + " | ".join(f"order {o}" for o in orders) + " | detail |",
              "|---|" + "---|" * len(orders) + "---|"]
    for row in rows:
        detail = next((row[o][1] for o in orders if row[o][0] not in ("pass", "n/a")), "")
        lines.append(f"| {row['name']} | " + " | ".join(row[o][0] for o in orders) +
                     f" | {detail.replace('|', '/')} |")
    Path(path).write_text("\n".join(lines) + "\n")


def read_report(path):
    """{variant: {order: class}} from a committed report."""
    table, orders = {}, []
    for line in Path(path).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "variant":
            orders = [int(c.split()[-1]) for c in cells[1:-1]]
        elif orders and line.startswith("| ") and not cells[0].startswith("---"):
            table[cells[0]] = dict(zip(orders, cells[1:1 + len(orders)]))
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=None, help="default: all")
    parser.add_argument("--order", default="1,2", help="orders to check, e.g. 1 or 1,2")
    parser.add_argument("--timeout", type=int, default=120)
    parser.add_argument("--report", help="write the markdown table here")
    parser.add_argument("--only", help="comma-separated OpInfo names")
    a = parser.parse_args()
    orders = [int(o) for o in a.order.split(",")]
    ops = variants()
    if a.only:
        ops = [o for o in ops if o.name in a.only.split(",")]
    start, rows, slow = time.time(), [], []
    for o in ops:
        row = {"name": variant_name(o)}
        for order in orders:
            began = time.time()
            row[order] = classify(o, order, a.samples, a.timeout)
            slow.append((time.time() - began, row["name"], order))
            if row[order][0] in ("crash", "wrong"):
                print(f"{row['name']} (order {order}): {row[order][0]}: {row[order][1]}",
                      flush=True)
        rows.append(row)
    seconds = time.time() - start
    for order in orders:
        counts = Counter(r[order][0] for r in rows)
        print(f"order {order}: {len(rows)} variants, {summary(counts)}")
    print(f"{seconds:.0f} s; slowest: " + ", ".join(
        f"{name} (order {order}) {t:.1f} s" for t, name, order in sorted(slow)[::-1][:15]))
    if a.report:
        write_report(a.report, rows, orders, a.samples, seconds)
    bad = any(r[o][0] in ("crash", "wrong") for r in rows for o in orders)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
