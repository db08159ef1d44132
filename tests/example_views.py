"""Run an example script, then check every printed view of every derivative it built.

    python tests/example_views.py examples/mlp.py

The script runs as ``__main__`` (its own checks against torch.autograd run and its exit
status counts). Every object that ``sg.grad_fn``, ``sg.jacobian`` and ``sg.hessian`` return
while it runs is recorded; afterwards, at random small sizes and inputs, each one's views
are evaluated against its compiled NumPy code: ``verify()`` (the formulas by SymPy alone,
``explicit``), and for gradients also the NumPy text (run by NumPy alone), the program and
the formulas again through the fuzzer's evaluators (``tests/fuzz/views.py``). Prints one
line per object; exits 1 if any view disagrees.
"""
import runpy
import sys
from pathlib import Path

import numpy as np
import sympy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import symgrad as sg  # noqa: E402
from fuzz.views import compare_views  # noqa: E402

MADE = []


def recording(fn):
    def record(*args, **kwargs):
        out = fn(*args, **kwargs)
        if hasattr(out, "verify") and hasattr(out, "inputs"):
            MADE.append(out)
        return out
    record.__wrapped__ = fn
    return record


def sizes(obj, rng):
    """Small sizes for the symbolic dims of ``obj``'s inputs, 2 and 3 in turn (distinct
    sizes show a transposed formula; per-element forms grow fast with them)."""
    dims = {}
    for x in obj.inputs:
        for d in x.shape:
            for s in sorted(getattr(sympy.sympify(d), "free_symbols", ()), key=str):
                dims.setdefault(str(s), 2 + len(dims) % 2)
    return dims


def arguments(obj, dims, rng, sample):
    args = []
    for x in obj.inputs:
        shape = tuple(int(sympy.sympify(d).subs(
            {s: dims[str(s)] for s in getattr(sympy.sympify(d), "free_symbols", ())}))
            for d in x.shape)
        args.append(sample(x.name, shape, rng))
    return args


def normal(name, shape, rng):
    return rng.standard_normal(shape)


def positive_definite(name, shape, rng):
    """Square matrices A Aᵀ + I (a domain every matrix function here accepts), others
    standard normal."""
    a = rng.standard_normal(shape)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        return a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1])
    return a


def main(script):
    for name in ("grad_fn", "jacobian", "hessian"):
        setattr(sg, name, recording(getattr(sg, name)))
    sys.argv = [script]
    sys.path.insert(0, str(Path(script).resolve().parent))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise
    rng = np.random.default_rng(0)
    failed = 0
    print(f"\nviews of the {len(MADE)} derivative objects {Path(script).name} built:")
    for obj in MADE:
        if any(x.kind != "float" for x in obj.inputs):
            print(f"  {obj.name}: integer or boolean inputs, checked by the script itself")
            continue
        dims = sizes(obj, rng)
        sample = normal
        try:
            report = obj.verify(**dims)
        except sg.ArgumentError:        # outside the function's domain (a Cholesky factor
            sample = positive_definite  # of a random matrix)
            report = obj.verify(sample=sample, **dims)
        problems = [] if report.ok else [str(report)]
        if isinstance(obj, sg.GradFn):
            problems += compare_views(obj, arguments(obj, dims, rng, sample), dims,
                                      views=("text", "program", "formulas"))
        failed += bool(problems)
        print(f"  {obj.name} at {dims}: " + ("every view agrees" if not problems
                                             else "MISMATCH\n    " + "\n    ".join(problems)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(sys.argv[1])
