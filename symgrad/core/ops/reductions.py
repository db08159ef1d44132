"""Reductions: sum, mean, max/min (torch.max semantics), amax/amin, prod, var, std and
running sums; and the parameter, shape and spelling helpers every reduction shares (the
norm and log-sum-exp reductions of other families use them too). Derivatives:
rules/reductions.yaml.
"""
from typing import Callable

import numpy
import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply
from ..opdef import FunctionT, defop
from ..shapes import fmt_shape, normalize_axes, normalize_axis
from .. import simplify as simp
from . import batching, elements
from ..types import Axis, Result, TensorLike


# ----- what reductions share ---------------------------------------------------------------

def reduce_params(op, shapes, axis=None, keepdims=False):
    rank = len(shapes[0])
    axes = normalize_axes(axis, rank, op)
    return (("axis", axes), ("keepdims", bool(keepdims)), ("full", len(axes) == rank))


def reduce_shape(op, shapes, attrs):
    axes, keep = attrs["axis"], attrs["keepdims"]
    return tuple(1 if i in axes else d for i, d in enumerate(shapes[0])
                 if keep or i not in axes)


REDUCE_PARAMS = ("axis", "keepdims", "full")


def reduce_text(name, extra=lambda **p: ""):
    """``name(x)``, or ``name(x, axis=1)`` / ``name(x, axis=(0, 1), keepdims=True)``."""
    def spell(x, axis, keepdims, full, **rest):
        more = extra(**rest)
        if full.value and not keepdims.value:
            return f"{name}({x}{more})"
        axes = axis.value
        ax = str(axes[0]) if len(axes) == 1 else f"{axis}"
        keep = ", keepdims=True" if keepdims.value else ""
        return f"{name}({x}, axis={ax}{keep}{more})"
    return spell


def reduce_latex(name):
    """``\\operatorname{name}(x)``, with the reduced axes as a subscript unless all."""
    def spell(x, axis, keepdims, full, **rest):
        sub = "" if full.value else "_{" + ",".join(str(a) for a in axis.value) + "}"
        return rf"\operatorname{{{name}}}{sub}\left({x}\right)"
    return spell


def reduce_code(fn, axis_kw, keep_kw, extra=lambda **p: ""):
    """``fn(x)`` over everything, else ``fn(x, axis=(...), keepdims=...)`` as the backend
    names them (``axis``/``keepdims`` in NumPy, ``dim``/``keepdim`` in torch)."""
    def spell(x, axis, keepdims, full, **rest):
        more = extra(**rest)
        if full.value and not keepdims.value:
            return f"{fn}({x}{more})"
        return f"{fn}({x}, {axis_kw}={axis}, {keep_kw}={keepdims}{more})"
    return spell


def numpy_reduce(fn, extra=lambda **p: ""):
    return reduce_code(fn, "axis", "keepdims", extra)


def torch_reduce(fn, extra=lambda **p: ""):
    return reduce_code(fn, "dim", "keepdim", extra)


def reduction(name, *, simplify=simp.over_no_axes(None), params=reduce_params,
              **kw) -> Callable[[FunctionT], FunctionT]:
    """``defop`` of a reduction over ``axis`` (all axes by default); over no axes it is
    its input unless ``simplify`` says otherwise."""
    kw.setdefault("sympy_params", REDUCE_PARAMS)
    kw.setdefault("text", reduce_text(name))
    kw.setdefault("latex", reduce_latex(name))
    kw.setdefault("batch", batching.along_axes)
    return defop(name, ("x",), params=params, shape=reduce_shape, simplify=simplify, **kw)


def axis_params(op, shapes, axis=-1):
    """One axis (softmax, cumsum): needs at least one dim."""
    rank = len(shapes[0])
    if rank == 0:
        raise ShapeError(f"{op}: needs at least one dim, got a scalar")
    return (("axis", normalize_axis(axis, rank, op)),)


def same_shape(op, shapes, attrs):
    return shapes[0]


# ----- sum and mean --------------------------------------------------------------------------

def _mean_elements(ctx, x):
    n = 1
    for a in ctx.attrs["axis"]:
        n *= x.shape[a]
    total = numpy.sum(x, axis=ctx.attrs["axis"], keepdims=ctx.attrs["keepdims"])
    return total * sympy.Rational(1, n)


def _sum_elements(ctx, x):
    return numpy.sum(x, axis=ctx.attrs["axis"], keepdims=ctx.attrs["keepdims"])


def _sum_numpy(x, axis, keepdims, full):
    # the ufunc method directly: numpy.sum's Python wrapper costs ~1.7 µs a call
    if full.value and not keepdims.value:
        return f"numpy.add.reduce({x}, axis=None)"
    return f"numpy.add.reduce({x}, axis={axis}, keepdims={keepdims})"


@reduction("sum", simplify=simp.reduction("sum"), numpy=_sum_numpy,
           numpy_text=reduce_text("numpy.sum"),
           torch=torch_reduce("torch.sum"), elements=_sum_elements,
           matrix=lambda m, node, x: m.sum(node, x), torch_names=("torch.sum",))
def sum(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Result:
    """Sum over all axes (axis=None), one axis or a tuple of axes."""
    return apply("sum", x, axis=axis, keepdims=keepdims)


@reduction("mean", simplify=simp.reduction("mean"), numpy=numpy_reduce("numpy.mean"),
           numpy_text=reduce_text("numpy.mean"),
           torch=torch_reduce("torch.mean"), elements=_mean_elements,
           matrix=lambda m, node, x: m.mean(node, x), torch_names=("torch.mean",))
def mean(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Result:
    """Arithmetic mean over all axes (axis=None), one axis or a tuple of axes."""
    return apply("mean", x, axis=axis, keepdims=keepdims)


# ----- extrema ---------------------------------------------------------------------------------

def one_axis_params(op, shapes, axis=None, keepdims=False):
    if isinstance(axis, (tuple, list)) and len(axis) != 1:
        raise ShapeError(f"{op}: reduces over all axes or one axis, got axis={tuple(axis)}")
    if isinstance(axis, (tuple, list)):
        axis = axis[0]
    return reduce_params(op, shapes, axis=axis, keepdims=keepdims)


def _extremum_params(op, shapes, axis=None, keepdims=False):
    """As torch: max(x) shares the gradient between ties, max(x, dim) sends it to the
    first maximum along dim, even when dim is x's only axis (``first``)."""
    return one_axis_params(op, shapes, axis, keepdims) + (("first", axis is not None),)


_max_elements = elements.reduce(lambda v: sympy.Max(*v))
_min_elements = elements.reduce(lambda v: sympy.Min(*v))


@reduction("amax", numpy=numpy_reduce("numpy.max"), numpy_text=reduce_text("numpy.max"), torch=torch_reduce("torch.amax"),
           latex=reduce_latex("max"), elements=_max_elements,
           torch_names=("torch.amax", "torch.Tensor.amax"))
def amax(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Result:
    """Largest element over ``axis`` (all axes when None); ties share the gradient."""
    return apply("amax", x, axis=axis, keepdims=keepdims)


@reduction("amin", numpy=numpy_reduce("numpy.min"), numpy_text=reduce_text("numpy.min"), torch=torch_reduce("torch.amin"),
           latex=reduce_latex("min"), elements=_min_elements,
           torch_names=("torch.amin", "torch.Tensor.amin"))
def amin(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Result:
    """Smallest element over ``axis`` (all axes when None); ties share the gradient."""
    return apply("amin", x, axis=axis, keepdims=keepdims)


@reduction("max", params=_extremum_params, numpy=numpy_reduce("numpy.max"),
           numpy_text=reduce_text("numpy.max"),
           torch=torch_reduce("torch.amax"), elements=_max_elements)
def max(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Result:
    """Largest element, over everything or along one axis. As in torch, ``max(x)`` splits
    the gradient between ties and ``max(x, axis)`` sends it to the first maximum. Returns
    the values only (``torch.max(x, dim)`` also returns indices)."""
    return apply("max", x, axis=axis, keepdims=keepdims)


@reduction("min", params=_extremum_params, numpy=numpy_reduce("numpy.min"),
           numpy_text=reduce_text("numpy.min"),
           torch=torch_reduce("torch.amin"), elements=_min_elements)
def min(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Result:
    """Smallest element, over everything or along one axis (see ``max``)."""
    return apply("min", x, axis=axis, keepdims=keepdims)


# ----- products and statistics -----------------------------------------------------------------

def _prod_torch(x, axis, keepdims, full):
    if full.value and not keepdims.value:
        return f"torch.prod({x})"
    if len(axis.value) == 1:
        return f"torch.prod({x}, dim={axis.value[0]}, keepdim={keepdims})"
    return f"torch.prod({x}).reshape({(1,) * len(axis.value)})"


@reduction("prod", params=one_axis_params, numpy=numpy_reduce("numpy.prod"),
           numpy_text=reduce_text("numpy.prod"),
           torch=_prod_torch, elements=elements.reduce(sympy.Mul.fromiter),
           torch_names=("torch.prod", "torch.Tensor.prod"))
def prod(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Result:
    """Product of the elements over all axes or one axis."""
    return apply("prod", x, axis=axis, keepdims=keepdims)


def _stat_params(op, shapes, axis=None, correction=1, keepdims=False):
    if isinstance(correction, bool) or not isinstance(correction, (int, float)):
        raise ParameterError(f"{op}: correction must be a number, got {correction!r}")
    return reduce_params(op, shapes, axis=axis, keepdims=keepdims) + (
        ("correction", correction),)


def _correction_text(correction):
    return "" if correction.expr == 1 else f", correction={correction}"


def _var_elements(ctx, x):
    a = ctx.attrs
    n = 1
    for k in a["axis"]:
        n *= x.shape[k]
    mean = numpy.sum(x, axis=a["axis"], keepdims=True) * sympy.Rational(1, n)
    sq = numpy.sum((x - mean) ** 2, axis=a["axis"], keepdims=a["keepdims"])
    return sq / sympy.nsimplify(n - a["correction"])


def _statistic(name, elements_form) -> Callable[[FunctionT], FunctionT]:
    return reduction(
        name, params=_stat_params, sympy_params=REDUCE_PARAMS + ("correction",),
        simplify=None,
        text=reduce_text(name, lambda correction: _correction_text(correction)),
        numpy=numpy_reduce(f"numpy.{name}", lambda correction: f", ddof={correction}"),
        torch=torch_reduce(f"torch.{name}", lambda correction: f", correction={correction}"),
        elements=elements_form)


@_statistic("var", _var_elements)
def var(x: TensorLike, axis: Axis = None, correction: float = 1, keepdims: bool = False) -> Result:
    """Variance with torch's default Bessel correction (``correction=1``); NumPy's
    ``ddof``."""
    return apply("var", x, axis=axis, correction=correction, keepdims=keepdims)


@_statistic("std", lambda ctx, x: elements.vectorize(sympy.sqrt)(_var_elements(ctx, x)))
def std(x: TensorLike, axis: Axis = None, correction: float = 1, keepdims: bool = False) -> Result:
    """Standard deviation, the square root of ``var`` (same ``correction``)."""
    return apply("std", x, axis=axis, correction=correction, keepdims=keepdims)


def _cumsum_params(op, shapes, axis):
    if not shapes[0]:
        raise ShapeError(f"cumsum: needs at least one dim, got shape {fmt_shape(shapes[0])}")
    return axis_params(op, shapes, axis)


@defop("cumsum", ("x",), params=_cumsum_params, shape=same_shape,
       text="cumsum({x}, axis={axis})", latex=r"\operatorname{{cumsum}}_{{{axis}}}\left({x}\right)",
       numpy="numpy.cumsum({x}, axis={axis})", torch="torch.cumsum({x}, dim={axis})",
       elements=lambda ctx, x: numpy.cumsum(x, axis=ctx.attrs["axis"]),
       batch=batching.along_axes,
       torch_names=("torch.cumsum", "torch.Tensor.cumsum"))
def cumsum(x: TensorLike, axis: int) -> Result:
    """Running sums along ``axis`` (a 0-d ``x`` is its own running sum, as in torch)."""
    if getattr(x, "shape", None) == ():
        normalize_axis(axis, 1, "cumsum")
        return x
    return apply("cumsum", x, axis=axis)
