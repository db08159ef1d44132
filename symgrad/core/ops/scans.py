"""Running products and running log-sum-exps: ``cumprod`` and ``logcumsumexp`` (the running
sum is ``cumsum`` in reductions). Derivatives: rules/scans.yaml, whose helpers
(``diff/scan_helpers.py``) are exact where torch is: at zeros of cumprod (no division by
an element) and for logcumsumexp of widely spread values (no exp of a difference that
could overflow).
"""
import numpy

from ..build import apply
from ..opdef import defop
from ..shapes import fmt_shape, normalize_axis
from ...errors import ShapeError
from .reductions import axis_params, same_shape
from . import batching


def _scan_params(op, shapes, axis):
    if not shapes[0]:
        raise ShapeError(f"{op}: needs at least one dim, got shape {fmt_shape(shapes[0])}")
    return axis_params(op, shapes, axis)


def _logaddexp_accumulate(line):
    import sympy
    out, acc = [], None
    for v in line:
        acc = v if acc is None else sympy.log(sympy.exp(acc) + sympy.exp(v))
        out.append(acc)
    return out


def _logcumsumexp_elements(ctx, x):
    a = ctx.attrs["axis"]
    moved = numpy.moveaxis(x, a, -1)
    out = numpy.empty(moved.shape, dtype=object)
    for p in numpy.ndindex(*moved.shape[:-1]):
        out[p] = _logaddexp_accumulate(moved[p])
    return numpy.moveaxis(out, -1, a)


@defop("cumprod", ("x",), params=_scan_params, shape=same_shape,
       text="cumprod({x}, axis={axis})",
       latex=r"\operatorname{{cumprod}}_{{{axis}}}\left({x}\right)",
       numpy="numpy.cumprod({x}, axis={axis})", torch="torch.cumprod({x}, dim={axis})",
       elements=lambda ctx, x: numpy.cumprod(x, axis=ctx.attrs["axis"]),
       batch=batching.along_axes, torch_names=("torch.cumprod", "torch.Tensor.cumprod"))
def cumprod(x, axis):
    """Running products along ``axis`` (a 0-d ``x`` is its own running product)."""
    if getattr(x, "shape", None) == ():
        normalize_axis(axis, 1, "cumprod")
        return x
    return apply("cumprod", x, axis=axis)


@defop("logcumsumexp", ("x",), params=_scan_params, shape=same_shape,
       text="logcumsumexp({x}, axis={axis})",
       latex=r"\operatorname{{logcumsumexp}}_{{{axis}}}\left({x}\right)",
       numpy="numpy.logaddexp.accumulate({x}, axis={axis})",
       torch="torch.logcumsumexp({x}, dim={axis})",
       elements=_logcumsumexp_elements, batch=batching.along_axes,
       torch_names=("torch.logcumsumexp", "torch.Tensor.logcumsumexp"))
def logcumsumexp(x, axis):
    """log(cumsum(exp(x))) along ``axis``, computed without overflow."""
    if getattr(x, "shape", None) == ():
        normalize_axis(axis, 1, "logcumsumexp")
        return x
    return apply("logcumsumexp", x, axis=axis)
