"""PyTorch's OpInfo database as a conformance walk: every OpInfo that supports autograd in
float64, up to ``--samples`` of torch's own sample inputs each, traced through symgrad's torch
front end as ``f(tensors) = Σ_k sum(out_k * w_k)``; the compiled NumPy gradient is compared
with torch.autograd (float64). Each variant is classed:

* ``pass``: every sample traced and matched;
* ``partial``: some samples matched, the others were refused;
* ``refused``: symgrad raised UnsupportedOpError (or another SymgradError) for every sample;
* ``crash``: another exception;
* ``wrong``: a gradient differs from torch's.

    python -m tests.conformance.opinfo                        # summary
    python -m tests.conformance.opinfo --report conformance.md   # and a markdown table

Needs ``expecttest`` (torch's test helpers import it). This is the first step of the
conformance suite (issue 15): a baseline, not yet part of the default test run.
"""
import argparse
import signal
import sys
import time
from collections import Counter
from contextlib import contextmanager

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


def check_sample(opinfo, sample):
    """None when symgrad matches torch on this sample, else (class, detail)."""
    leaves = _leaves([sample.input, list(sample.args), sample.kwargs], [])
    if not leaves:
        return None
    with torch.no_grad():
        ref_out = _outputs(opinfo.op(sample.input, *sample.args, **sample.kwargs))
    weights = [torch.linspace(-1.0, 1.5, o.numel(), dtype=D).reshape(o.shape)
               if o.numel() > 1 else torch.full(tuple(o.shape), 0.7, dtype=D)
               for o in ref_out]

    def loss(outs):
        total = 0
        for o, w in zip(outs, weights):
            total = total + (o * w).sum()
        return total

    def f(*xs):
        table = {id(t): x for t, x in zip(leaves, xs)}
        args = _replace([sample.input, list(sample.args), sample.kwargs], table)
        return loss(_outputs(opinfo.op(args[0], *args[1], **args[2])))

    names = [f"x{k}" for k in range(len(leaves))]
    import inspect
    f.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
    f.__name__ = opinfo.name.replace(".", "_")
    try:
        g = sg.grad_fn(f, shapes={n: tuple(t.shape) for n, t in zip(names, leaves)})
        ours = g.compile("numpy")(*[t.detach().numpy() for t in leaves])
    except sg.UnsupportedOpError as e:
        return "refused", str(e).split(". To support")[0][:160]
    except sg.SymgradError as e:
        return "refused", f"{type(e).__name__}: {str(e)[:150]}"
    except Timeout:
        raise
    except Exception as e:  # noqa: BLE001 - a crash is a finding
        return "crash", f"{type(e).__name__}: {str(e)[:150]}"
    xs = [t.detach().clone().requires_grad_() for t in leaves]
    table = {id(t): x for t, x in zip(leaves, xs)}
    args = _replace([sample.input, list(sample.args), sample.kwargs], table)
    out = loss(_outputs(opinfo.op(args[0], *args[1], **args[2])))
    if not isinstance(out, torch.Tensor) or not out.requires_grad:
        return None
    ref = torch.autograd.grad(out, xs, allow_unused=True, materialize_grads=True)
    for n, o, r in zip(names, ours, ref):
        o = np.asarray(o, dtype=float)
        r = r.detach().numpy(force=True)
        if o.shape != r.shape or not np.allclose(o, r, rtol=1e-6, atol=1e-8, equal_nan=True):
            return "wrong", f"d/d{n}: shapes {o.shape}/{r.shape}" if o.shape != r.shape \
                else f"d/d{n}: max error {np.nanmax(np.abs(o - r)):.3g}"
    return None


def classify(opinfo, samples, timeout):
    results = []
    try:
        with time_limit(timeout):
            for k, sample in enumerate(opinfo.sample_inputs("cpu", D, requires_grad=True)):
                if k >= samples:
                    break
                results.append(check_sample(opinfo, sample))
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--timeout", type=int, default=60)
    parser.add_argument("--report", help="write a markdown table here")
    parser.add_argument("--only", help="comma-separated OpInfo names")
    a = parser.parse_args()
    ops = variants()
    if a.only:
        ops = [o for o in ops if o.name in a.only.split(",")]
    start, rows, counts = time.time(), [], Counter()
    for o in ops:
        name = o.name + (f".{o.variant_test_name}" if o.variant_test_name else "")
        kind, detail = classify(o, a.samples, a.timeout)
        counts[kind] += 1
        rows.append((name, kind, detail))
        if kind in ("crash", "wrong"):
            print(f"{name}: {kind}: {detail}", flush=True)
    total = len(rows)
    summary = ", ".join(f"{k} {counts[k]}" for k in ("pass", "partial", "refused", "crash",
                                                      "wrong"))
    print(f"{total} OpInfo variants, {a.samples} samples each at most, "
          f"{time.time() - start:.0f} s: {summary}")
    if a.report:
        with open(a.report, "w") as fh:
            fh.write("# symgrad against PyTorch's OpInfo database\n\n")
            fh.write(f"`python -m tests.conformance.opinfo --report {a.report}` (torch "
                     f"{torch.__version__}, symgrad {sg.__version__}): {total} variants that "
                     f"support autograd in float64, up to {a.samples} samples each, order 1, "
                     f"compiled NumPy gradient vs torch.autograd. {summary}.\n\n")
            fh.write("| variant | class | detail |\n|---|---|---|\n")
            for name, kind, detail in rows:
                fh.write(f"| {name} | {kind} | {detail.replace('|', '/')} |\n")
    return 1 if counts["crash"] or counts["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
