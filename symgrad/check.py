"""``sg.check``: symgrad's compiled gradients against ``torch.autograd``.

The reference is ``f`` itself run on float64 torch tensors under autograd (symgrad ops
compute on torch tensors, so a function written with ``sg`` ops is its own reference).
First order compares gradients; second order compares Hessian-vector products: symgrad
differentiates the gradient program again (sum of gradient * v), torch runs double
backward with ``create_graph=True``.

An input declared symmetric (``sg.TensorSpec(("n", "n"), symmetric=True)``) is sampled
symmetric (the sample made so by (A + Aᵀ)/2), and torch differentiates f((X + Xᵀ)/2) at
it: that gradient, sym(G), is the convention symgrad follows. Its Hessian directions v
are symmetric too.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy

from .api import grad_fn
from .api.grad import positional
from .codegen import compile_function
from .core.build import const, is_symmetric_leaf, reference_constants, symbol
from .core.optional import require_torch
from .core.shapes import dim_symbols
from .core.types import Shapes, Wrt
from .diff.reverse import backward
from .errors import CheckError, SymgradError
from .torchfront.module import as_function


@dataclass
class CheckReport:
    """What ``check`` compared and the largest deviations it saw.

    Example:

    >>> import symgrad as sg
    >>> report = sg.check(lambda x: sg.sin(x) * x, trials=1)
    >>> report.ok, report.wrt
    (True, ['x'])
    >>> sorted(report.max_abs_error)
    ['H·v d/dx [numpy]', 'H·v d/dx [torch]', 'd/dx [numpy]', 'd/dx [torch]']
    """

    function: str
    wrt: list[str]
    dims: dict[str, int]
    order: int
    trials: int
    backends: tuple[str, ...]
    max_abs_error: dict[str, float] = field(default_factory=dict)
    max_rel_error: dict[str, float] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every comparison agreed (``check(..., raise_on_mismatch=False)``
        collects mismatches in ``failures`` instead of raising)."""
        return not self.failures

    def __str__(self) -> str:
        if self.failures:
            return "\n".join([f"sg.check({self.function}): {len(self.failures)} mismatches"]
                             + ["  " + f for f in self.failures])
        lines = [f"sg.check({self.function}): gradients w.r.t. {', '.join(self.wrt)} match "
                 f"torch.autograd (float64) at order{'s 1 and 2' if self.order == 2 else ' 1'}, "
                 f"{self.trials} random inputs, backends {', '.join(self.backends)}"
                 + (f", dims {self.dims}" if self.dims else "")]
        for key in sorted(self.max_abs_error):
            lines.append(f"  {key}: max abs error {self.max_abs_error[key]:.2e}, "
                         f"max rel error {self.max_rel_error[key]:.2e}")
        return "\n".join(lines)


def _default_dims(inputs, dims):
    import difflib
    sizes = dict(dims or {})
    free, known = [], []
    for x in inputs:
        for d in dim_symbols(x.shape):
            known.append(str(d))
            if str(d) not in sizes and str(d) not in free:
                free.append(str(d))
    unknown = sorted(set(sizes) - set(known))
    if unknown and free and (len(unknown) == len(sizes) or any(
            difflib.get_close_matches(name.lower(), [d.lower() for d in free], cutoff=0.5)
            for name in unknown)):
        raise SymgradError(f"check: dims names {unknown}, which no input's shape uses, while "
                           f"{free} get default sizes (the symbolic dims are "
                           f"{sorted(set(known))}); fix the spelling")
    for i, name in enumerate(free):
        sizes[name] = 2 + i % 4
    return sizes


def _concrete(shape, sizes):
    import sympy
    out = []
    for d in shape:
        if isinstance(d, int):
            out.append(d)
        else:
            out.append(int(sympy.sympify(d).subs({s: sizes[str(s)] for s in d.free_symbols})))
    return tuple(out)


def _compare(ours, ref, label, report, rtol, atol, raise_on_mismatch=True, hint="",
             equal_nan=False):
    """Elementwise closeness with the absolute tolerance scaled to the block's largest
    element: an element that is small by cancellation inside a large gradient (deep nets)
    carries the rounding error of the large terms it came from."""
    ours = numpy.asarray(ours, dtype=float)
    ref = numpy.asarray(ref, dtype=float)
    finite_ref = numpy.abs(ref[numpy.isfinite(ref)])
    atol = atol + rtol * (float(finite_ref.max()) if finite_ref.size else 0.0)
    problem = None
    if ours.shape != ref.shape:
        problem = f"{label}: symgrad gives shape {ours.shape}, torch gives {ref.shape}"
    elif not equal_nan and not numpy.isfinite(ref).all():
        idx = _plain(numpy.unravel_index(int(numpy.argmin(numpy.isfinite(ref))), ref.shape)
                     if ref.shape else ())
        problem = (f"{label}: torch.autograd gives {float(ref[idx])} at index {idx} for these "
                   f"inputs (symgrad gives {float(ours[idx])}), so nothing there can be "
                   "compared; the inputs are outside the function's domain (a negative "
                   "variance, a log of a negative number, an overflow): pass sample=... to "
                   "draw inputs where f and its derivatives are finite")
    elif not numpy.allclose(ours, ref, rtol=rtol, atol=atol, equal_nan=True):
        # the worst element among those that disagree (nan on both sides agrees)
        close = numpy.isclose(ours, ref, rtol=rtol, atol=atol, equal_nan=True)
        gap = numpy.abs(numpy.nan_to_num(ours - ref, nan=numpy.inf, posinf=numpy.inf,
                                         neginf=numpy.inf))
        bad = numpy.argmax(numpy.where(close, -1.0, gap))
        idx = _plain(numpy.unravel_index(bad, ref.shape) if ref.shape else ())
        problem = (f"{label}: symgrad and torch.autograd disagree; at index {idx} "
                   f"symgrad gives {float(ours[idx])!r}, torch gives {float(ref[idx])!r}{hint}")
    if problem is not None:
        if raise_on_mismatch:
            raise CheckError(problem)
        report.failures.append(problem)
        return
    diff = numpy.abs(ours - ref)
    finite = numpy.isfinite(diff)
    err = float(diff[finite].max()) if finite.any() else 0.0
    rel = float((diff[finite] / (numpy.abs(ref[finite]) + 1e-300)).max()) if finite.any() else 0.0
    report.max_abs_error[label] = max(report.max_abs_error.get(label, 0.0), err)
    report.max_rel_error[label] = max(report.max_rel_error.get(label, 0.0), min(rel, 1e300))


def _plain(index):
    """An index as Python ints, for messages."""
    return tuple(int(i) for i in index)


def _module_buffers(f, inputs):
    """{input name: value} for the inputs of a module's function that are its buffers
    (BatchNorm's running statistics): checked at the module's own values, since a random
    one can lie outside their domain (a negative variance)."""
    state = getattr(f, "_state", None)
    if state is None:
        return {}
    names = {x.name for x in inputs}
    return {f.symbols[q]: t.detach().double().cpu().numpy() for q, t, trainable in state
            if not trainable and f.symbols.get(q) in names}


def _index_bound(inputs, sizes):
    """Integer inputs are drawn from [0, k) with k the smallest size among the float
    inputs' dims (so an id is valid for any table or class dim; pass ``sample`` for
    other ranges)."""
    dims = [d for x in inputs if x.kind == "float" for d in _concrete(x.shape, sizes)]
    return max(1, min(dims, default=2))


def _torch_args(args):
    torch = require_torch("sg.check")
    return [torch.as_tensor(a) if getattr(a, "dtype", None) is not None and a.dtype.kind in "bi"
            else torch.tensor(a, dtype=torch.float64) for a in args]


def _symmetrized(a):
    """(a + aᵀ)/2 over the last two axes: exactly symmetric, and a itself when a is."""
    a = numpy.asarray(a, dtype=float)
    return (a + numpy.swapaxes(a, -1, -2)) / 2


def _sym_reference(reference, inputs):
    """``reference`` with each symmetric input X replaced by (X + Xᵀ)/2 (torch tensors):
    torch.autograd then gives the symmetric gradient at a symmetric X."""
    flags = [is_symmetric_leaf(x) for x in inputs]
    if not any(flags):
        return reference

    def symmetric_reference(*args):
        return reference(*[(a + a.mT) / 2 if s else a for a, s in zip(args, flags)])
    return symmetric_reference


def check(f: Callable[..., Any], shapes: Shapes | None = None,
          dims: Mapping[str, int] | None = None, order: int = 2, wrt: Wrt = None,
          trials: int = 3, seed: int = 0, rtol: float = 1e-7, atol: float = 1e-9,
          sample: Callable[[str, tuple[int, ...], numpy.random.Generator], Any] | None = None,
          backends: Sequence[str] = ("numpy", "torch"),
          reference: Callable[..., Any] | None = None, raise_on_mismatch: bool = True,
          loss: Callable[..., Any] | None = None, equal_nan: bool = False) -> CheckReport:
    """Compare symgrad's compiled gradients of ``f`` with torch.autograd.

    ``dims`` gives sizes to symbolic dims (others get small distinct sizes); ``sample``
    (name, shape, rng) -> array draws inputs (default standard normal); ``reference`` is
    the function torch runs (default ``f``; for an ``nn.Module``, the real module run
    through torch.func.functional_call, then ``loss``); a symmetric input X reaches it as
    (X + Xᵀ)/2, so torch's gradient is the symmetric one. Returns a ``CheckReport``; raises
    ``CheckError`` on the first mismatch, or with ``raise_on_mismatch=False`` records
    every mismatch in ``report.failures`` (``report.ok`` is then False). Where torch's
    gradient is nan or inf nothing can be compared, so that is a mismatch too, unless
    ``equal_nan=True`` (as ``torch.testing.assert_close``): then nan agrees with nan and
    inf with the same inf, to check that symgrad propagates them as torch does.

    Example:

    >>> import symgrad as sg
    >>> report = sg.check(lambda x, y: sg.sum(sg.tanh(x) * y), shapes={"x": ("n",), "y": ("n",)}, trials=1)
    >>> report.ok, report.order, report.dims
    (True, 2, {'n': 2})
    """
    torch = require_torch("sg.check (it compares with torch.autograd)")

    f, shapes, wrt = as_function(positional(f), shapes, loss, wrt)
    g = grad_fn(f, wrt=wrt, shapes=shapes)
    sizes = _default_dims(g.inputs, dims)
    reference = _sym_reference(reference or f, g.inputs)
    rng = numpy.random.default_rng(seed)
    report = CheckReport(g.name, [f"{x.name}" for x in g.wrt], sizes, order, trials, tuple(backends))
    compiled = {b: g.compile(b) for b in backends}

    hvp = None
    if order >= 2:
        taken = {str(x.name) for x in g.inputs}
        vs = [symbol(_fresh(f"_v_{x.name}", taken), x.shape) for x in g.wrt]
        inner = None
        for gr, v in zip(g.grads, vs):
            if gr is not None:
                term = (gr * v).sum() if gr.shape else gr * v
                inner = term if inner is None else inner + term
        second = backward([inner], [const(1)], g.wrt) if inner is not None else [None] * len(vs)
        hvp = {b: compile_function(second, g.inputs + vs, b, "hvp",
                                   zero_shapes=[x.shape for x in g.wrt]) for b in backends}
    wrt_idx = [next(i for i, y in enumerate(g.inputs) if y is x) for x in g.wrt]
    ids = _index_bound(g.inputs, sizes)
    buffers = _module_buffers(f, g.inputs)
    for _ in range(trials):
        args = []
        for x in g.inputs:
            shape = _concrete(x.shape, sizes)
            if x.name in buffers and buffers[x.name].shape == shape:
                a = buffers[x.name]
            elif sample:
                a = sample(f"{x.name}", shape, rng)
            elif x.kind == "int":
                a = rng.integers(0, ids, shape)
            elif x.kind == "bool":
                a = rng.random(shape) < 0.5
            else:
                a = rng.standard_normal(shape)
            if is_symmetric_leaf(x):
                a = _symmetrized(a)
            if x.kind == "float":
                args.append(numpy.asarray(a, dtype=float) if shape else float(a))
            else:
                args.append(numpy.asarray(a, dtype=numpy.int64 if x.kind == "int" else bool))
        targs = [torch.tensor(a, dtype=torch.float64, requires_grad=i in wrt_idx)
                 if x.kind == "float" else torch.as_tensor(a)
                 for i, (x, a) in enumerate(zip(g.inputs, args))]
        with reference_constants(torch, sizes):
            out = reference(*targs)
        if not isinstance(out, torch.Tensor) or out.dim() != 0:
            raise SymgradError("check: the reference must return a scalar torch tensor")
        wrt_t = [targs[i] for i in wrt_idx]
        ref = torch.autograd.grad(out, wrt_t, create_graph=order >= 2, allow_unused=True,
                                  materialize_grads=True)
        for b, fn in compiled.items():
            call_args = _torch_args(args) if b == "torch" else args
            ours = fn(*call_args)
            for x, o, r in zip(g.wrt, ours, ref):
                o = o.detach().numpy() if b == "torch" else numpy.asarray(o)
                _compare(o, r.detach().numpy(force=True), f"d/d{x.name} [{b}]", report, rtol,
                         atol, raise_on_mismatch, equal_nan=equal_nan)
        if hvp is None:
            continue
        vs_np = [rng.standard_normal(_concrete(x.shape, sizes)) for x in g.wrt]
        vs_np = [_symmetrized(v) if is_symmetric_leaf(x) else v for x, v in zip(g.wrt, vs_np)]
        vs_np = [v if v.shape else float(v) for v in vs_np]
        vt = [torch.tensor(v, dtype=torch.float64) for v in vs_np]
        needs = [r for r in ref if r.requires_grad]
        if needs:
            total = sum((r * v).sum() for r, v in zip(ref, vt) if r.requires_grad)
            try:
                ref2 = torch.autograd.grad(total, wrt_t, allow_unused=True,
                                           materialize_grads=True)
            except RuntimeError as e:
                raise CheckError(f"check: torch.autograd has no second derivative here "
                                 f"({str(e).splitlines()[0]}); compare first derivatives "
                                 "with order=1") from None
        else:
            ref2 = [torch.zeros_like(t) for t in wrt_t]
        for b, fn in hvp.items():
            if b == "torch":
                ours2 = fn(*(_torch_args(args) + vt))
            else:
                ours2 = fn(*(args + vs_np))
            hint = "" if needs else (
                " (torch's first derivative here has no graph: if an op in the reference "
                "has no double backward, e.g. a once_differentiable Function, compare first "
                "derivatives with order=1)")
            for x, o, r in zip(g.wrt, ours2, ref2):
                o = o.detach().numpy() if b == "torch" else numpy.asarray(o)
                _compare(o, r.detach().numpy(force=True), f"H·v d/d{x.name} [{b}]", report, rtol,
                         atol, raise_on_mismatch, hint, equal_nan)
    return report


def _fresh(name, taken):
    """``name``, or with underscores added until it is none of ``taken`` (the function's
    own parameter names: a parameter named _v_x would be the direction of x)."""
    while name in taken:
        name += "_"
    taken.add(name)
    return name
