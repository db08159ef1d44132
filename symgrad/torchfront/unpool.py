"""torch's functions of pooling indices on symbolic Tensors: F.max_unpool1d/2d/3d, ATen's
max_pool2d/3d_with_indices_backward, torch.constant_pad_nd, and F.fractional_max_pool2d/3d
with fixed windows (``_random_samples``; without them the windows are random, refused).

The indices may be the integer tensor a traced ``F.max_pool*d(..., return_indices=True)``
returned or a constant torch passed; the maps are the ops of ``core.ops.unpool``.
"""
import sympy

from ..core import ops as sgo
from ..core.shapes import fmt_shape
from ..errors import ParameterError, ShapeError
from .conv import pad as _pad
from .dispatch import shape_of, torch_op, unsupported
from .gather import index_operand
from .pool import _spatial


def _ints(name, what, value, d):
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,) * d
    if len(values) == 1:
        values *= d
    if len(values) != d or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ParameterError(f"{name}: {what} must be an int or {d} ints, got {value!r}")
    return values


def _unpool_sizes(name, sizes, d, kernel_size, stride, padding, output_size):
    """torch's _unpool_output_size: (n - 1) · stride - 2 · padding + kernel, or
    ``output_size`` (its last d entries) when it is within a stride of that."""
    k = _ints(name, "kernel_size", kernel_size, d)
    s = k if stride is None or stride == [] or stride == () else _ints(name, "stride", stride, d)
    p = _ints(name, "padding", padding, d)
    default = tuple((n - 1) * si - 2 * pi + ki for n, si, pi, ki in zip(sizes, s, p, k))
    if output_size is None:
        out = default
    else:
        given = tuple(int(v) for v in output_size)
        if len(given) == d + 2:
            given = given[2:]
        if len(given) != d:
            raise ParameterError(f"{name}: output_size must have {d} or {d + 2} elements, "
                                 f"got {tuple(output_size)!r}")
        for m, want, si in zip(given, default, s):
            if isinstance(want, int) and not want - si < m < want + si:
                raise ShapeError(f"{name}: invalid output_size {given} (each size must be "
                                 f"within a stride of {default})")
        out = given
    out = tuple(int(m) if isinstance(m, sympy.Integer) else m for m in out)
    if any(isinstance(m, int) and m <= 0 for m in out):
        raise ShapeError(f"{name}: the output spatial size {out} must be positive")
    return out


def _max_unpool(d):
    name = f"torch.nn.functional.max_unpool{d}d"

    def handler(input, indices, kernel_size, stride=None, padding=0, output_size=None):
        sizes = _spatial(name, input, d)
        ids = index_operand(name, indices)
        if tuple(shape_of(ids)) != tuple(shape_of(input)):
            raise ShapeError(f"{name}: the indices of shape {fmt_shape(shape_of(ids))} must "
                             f"have the input's shape {fmt_shape(shape_of(input))}")
        out = _unpool_sizes(name, sizes, d, kernel_size, stride, padding, output_size)
        return sgo.max_unpool(input, ids, out)
    handler.__name__ = f"max_unpool{d}d"
    return handler


def _pool_backward(d):
    name = f"torch.ops.aten.max_pool{d}d_with_indices_backward"

    def handler(grad_output, self, kernel_size, stride, padding, dilation, ceil_mode, indices):
        """The gradient torch's max pool sends back: grad_output added at the indices
        (into the input's spatial size); piecewise constant in ``self``."""
        sizes = _spatial(name, self, d)
        ids = index_operand(name, indices)
        if tuple(shape_of(ids)) != tuple(shape_of(grad_output)):
            raise ShapeError(f"{name}: grad_output of shape "
                             f"{fmt_shape(shape_of(grad_output))} and indices of shape "
                             f"{fmt_shape(shape_of(ids))} must match")
        return sgo.unpool_add(grad_output, ids, sizes)
    handler.__name__ = f"max_pool{d}d_with_indices_backward"
    return handler


for _d in (1, 2, 3):
    torch_op(f"F.max_unpool{_d}d")(_max_unpool(_d))
for _d in (2, 3):
    torch_op(f"torch.ops.aten.max_pool{_d}d_with_indices_backward",
             f"torch.ops.aten.max_pool{_d}d_with_indices_backward.default")(_pool_backward(_d))


@torch_op("torch.constant_pad_nd")
def constant_pad_nd(input, pad, value=0):
    """ATen's constant padding (negative entries crop): F.pad in mode "constant"."""
    return _pad(input, pad, "constant", value)


_RANDOM = ("its pooling windows are drawn at random on every call, so the result has no "
           "formula; pass _random_samples (a (N, C, d) tensor in [0, 1)) to fix them, or use "
           "F.max_pool2d/3d or F.adaptive_max_pool2d/3d")


def _fractional(d, always_indices):
    name = f"torch.nn.functional.fractional_max_pool{d}d" + (
        "_with_indices" if always_indices else "")

    def handler(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                _random_samples=None):
        """Fixed windows (``_random_samples``): the index of each window's maximum
        (fractional_max_index) and the input read there."""
        if _random_samples is None:
            raise unsupported(name, (input,), why=_RANDOM)
        sizes = _spatial(name, input, d)
        kernel = _ints(name, "kernel_size", kernel_size, d)
        if output_size is None:
            if output_ratio is None:
                raise ParameterError(f"{name}: give output_size or output_ratio")
            ratio = tuple(output_ratio) if isinstance(output_ratio, (list, tuple)) else (
                output_ratio,) * d
            if len(ratio) == 1:
                ratio *= d
            if not all(isinstance(n, int) for n in sizes):
                raise ShapeError(f"{name}: output_ratio needs concrete spatial sizes, got "
                                 f"{fmt_shape(sizes)}")
            out = tuple(int(n * r) for n, r in zip(sizes, ratio))
        else:
            out = _ints(name, "output_size", output_size, d)
        samples = _random_samples
        if len(shape_of(input)) == d + 1:
            samples = sgo.reshape(samples, tuple(shape_of(samples))[1:])
        index = sgo.fractional_max_index(input, samples, kernel, out)
        values = sgo.unpool_gather(input, index, sizes)
        return (values, index) if return_indices or always_indices else values
    handler.__name__ = name.rsplit(".", 1)[-1]
    return handler


for _d in (2, 3):
    torch_op(f"F.fractional_max_pool{_d}d")(_fractional(_d, False))
    torch_op(f"F.fractional_max_pool{_d}d_with_indices")(_fractional(_d, True))
