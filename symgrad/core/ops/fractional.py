"""Fractional max pooling with fixed windows (torch's F.fractional_max_pool2d/3d given
``_random_samples``): ``fractional_max_index(x, samples)`` is where each window has its
maximum, as the flat spatial index torch returns with return_indices=True; the pooled
values are ``unpool_gather(x, index)``, whose rule sends the gradient back to those
places (torch's fractional_max_pool backward). An integer result: no gradient.

Each (batch, channel) plane has its own windows: along an axis of input size n, output
size m and kernel k, output o starts at int((o + u) α) - int(u α) with α = (n - k) / (m - 1)
(the last at n - k), u the plane's sample for that axis (torch's generate_intervals; 2-D
samples list (W, H), 3-D ones (T, H, W)). Within a window the first maximum wins, a nan
over any number.
"""

import numpy
import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply
from ..opdef import FUNCTIONS, defop
from ..shapes import dims_match, fmt_shape
from . import batching
from ..sources import function_source

def _fractional_starts(u, n, m, k):
    """generate_intervals: the window starts along one axis, for samples u (any shape)."""
    u = numpy.asarray(u, dtype=float)
    o = numpy.arange(m)
    if m > 1:
        alpha = (n - k) / (m - 1)
        s = numpy.trunc((o + u[..., None]) * alpha) - numpy.trunc(u[..., None] * alpha)
    else:
        s = numpy.zeros(u.shape + (m,))
    s = s.astype(numpy.int64)
    if m > 0:
        s[..., m - 1] = n - k
    return s


def _fractional_max_index(x, samples, kernel, out):
    """(lead, *out) flat spatial indices of each window's maximum (first max, last nan)."""
    x = numpy.asarray(x, dtype=float)
    d = len(kernel)
    sp = x.shape[x.ndim - d:]
    lead = x.shape[:x.ndim - d]
    samples = numpy.broadcast_to(numpy.asarray(samples, dtype=float), lead + (d,))
    order = (1, 0) if d == 2 else (0, 1, 2)
    flat, stride = 0, 1
    for k in reversed(range(d)):
        s = _fractional_starts(samples[..., order[k]], sp[k], out[k], kernel[k])
        idx = s[..., :, None] + numpy.arange(kernel[k])
        shape = lead + tuple(out[j] if j == k else 1 for j in range(d)) + tuple(
            kernel[j] if j == k else 1 for j in range(d))
        flat = flat + (idx * stride).reshape(shape)
        stride *= sp[k]
    width = int(numpy.prod(kernel))
    flat = numpy.broadcast_to(flat, lead + tuple(out) + tuple(kernel)).reshape(
        lead + tuple(out) + (width,))
    rows = x.reshape(lead + (int(numpy.prod(sp, dtype=numpy.int64)),))
    per_plane = int(numpy.prod(out, dtype=numpy.int64)) * width
    w = numpy.take_along_axis(rows, flat.reshape(lead + (per_plane,)), -1).reshape(flat.shape)
    nan = numpy.isnan(w)
    filled = numpy.where(nan, -numpy.inf, w)
    pos = numpy.argmax(filled == filled.max(axis=-1, keepdims=True), axis=-1)
    pos = numpy.where(nan.any(axis=-1), width - 1 - numpy.argmax(nan[..., ::-1], axis=-1), pos)
    return numpy.take_along_axis(flat, pos[..., None], -1)[..., 0]


_INDEX_T = '''def _fractional_max_index_t(x, samples, kernel, out):
    x = torch.as_tensor(x, dtype=torch.float64)
    index = _fractional_max_index(x.detach().cpu().numpy(),
                                  torch.as_tensor(samples).detach().cpu().numpy(), kernel, out)
    return torch.as_tensor(index, device=x.device)'''
_NUMPY = {f.__name__: function_source(f) for f in (_fractional_starts, _fractional_max_index)}
_TORCH = dict(_NUMPY, _fractional_max_index_t=_INDEX_T)


def _params(op, shapes, kernel, out):
    x, samples = shapes
    kernel, out = tuple(int(k) for k in kernel), tuple(int(m) for m in out)
    d = len(kernel)
    if d not in (2, 3) or len(out) != d or len(x) < d + 1:
        raise ShapeError(f"{op}: kernel {kernel} and output size {out} need 2 or 3 spatial "
                         f"dims of an input (*lead, C, *spatial), got {fmt_shape(x)}")
    for n, k, m in zip(x[len(x) - d:], kernel, out):
        if k < 1 or m < 1:
            raise ParameterError(f"{op}: kernel_size {kernel} and output_size {out} must be "
                                 "positive")
        if isinstance(n, int) and (m + k - 1 > n or (d == 3 and m + k - 1 == n)):
            raise ShapeError(f"{op}: output_size {out} + kernel_size {kernel} - 1 is too "
                             f"large for the input's spatial size {fmt_shape(x[len(x) - d:])} "
                             "(torch needs at most the size in 2-D, less in 3-D)")
    lead = tuple(x[:len(x) - d])
    if tuple(samples[:-1]) and (len(samples) != len(lead) + 1 or not all(
            dims_match(p, q) for p, q in zip(samples[:-1], lead)) or samples[-1] != d):
        raise ShapeError(f"{op}: the samples of shape {fmt_shape(samples)} must be "
                         f"{fmt_shape(lead + (d,))}, one per plane and spatial dim")
    return (("kernel", kernel), ("out", out))


def _shape(op, shapes, attrs):
    x = shapes[0]
    d = len(attrs["kernel"])
    return tuple(x[:len(x) - d]) + attrs["out"]


def _elements(ctx, x, samples):
    """The windows from the samples' values (numbers), then the first-max brackets."""
    from .pool import _first_max
    kernel, out = ctx.attrs["kernel"], ctx.attrs["out"]
    d = len(kernel)
    sp = x.shape[x.ndim - d:]
    lead = x.shape[:x.ndim - d]
    samples = numpy.broadcast_to(samples, lead + (d,))
    order = (1, 0) if d == 2 else (0, 1, 2)
    result = numpy.empty(ctx.shape, dtype=object)
    for b in numpy.ndindex(*lead):
        starts = [_fractional_starts(float(samples[b + (order[k],)]), sp[k], out[k],
                                     kernel[k]) for k in range(d)]
        for o in numpy.ndindex(*out):
            cells = list(numpy.ndindex(*kernel))
            cells = [tuple(int(starts[k][o[k]]) + c[k] for k in range(d)) for c in cells]
            hits = _first_max([x[b + c] for c in cells])
            result[b + o] = sympy.Add(*[h * int(numpy.ravel_multi_index(c, sp))
                                        for c, h in zip(cells, hits)])
    return result


def _int_kind(op, inputs):
    return "int"


def _text(x, samples, kernel, out):
    return (f"fractional_max_pool_indices({x}, {samples}, kernel_size={kernel}, "
            f"output_size={out})")


def _batch(node, ins, size):
    (x, bx), (s, bs) = ins
    return fractional_max_index(batching.unbatched(x, bx, size), batching.unbatched(s, bs, size),
                                node.attrs["kernel"], node.attrs["out"])


@defop("fractional_max_index", ("x", "samples"), jax="host", params=_params, shape=_shape,
       kind=_int_kind, differentiable=False, sympy_params=("kernel", "out"),
       text=_text,
       latex=lambda x, samples, kernel, out: (
           rf"\operatorname{{fractional\_max\_pool\_indices}}\left({x}, {samples}\right)"),
       matrix=lambda m, node, x, s: m.fn("fractional_max_pool_indices", x, s, data=(
           f"kernel_size={node.attrs['kernel']!r}, output_size={node.attrs['out']!r}")),
       numpy=lambda x, samples, kernel, out: (
           f"_fractional_max_index({x}, {samples}, {kernel}, {out})", _NUMPY),
       torch=lambda x, samples, kernel, out: (
           f"_fractional_max_index_t({x}, {samples}, {kernel}, {out})", _TORCH),
       elements=_elements, batch=_batch)
def fractional_max_index(x, samples, kernel, out):
    """The flat spatial index of each fractional max-pool window's maximum, the windows
    fixed by ``samples`` (*lead, d) in [0, 1)."""
    return apply("fractional_max_index", x, samples, kernel=tuple(kernel), out=tuple(out))


def _public(x, samples, kernel_size, output_size):
    return fractional_max_index(x, samples, kernel_size, output_size)


_public.__name__ = "fractional_max_pool_indices"
FUNCTIONS["fractional_max_pool_indices"] = _public
