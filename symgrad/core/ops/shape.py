"""Shape ops: transpose, reshape, squeeze, unsqueeze, broadcast_to and flip (and
``swapaxes``, written with transpose). Derivatives: rules/shape.yaml.
"""
import numpy
import sympy
from typing import Sequence

from ...errors import ShapeError
from ..build import apply
from ..opdef import defop, integer_kind, public, same_bounds
from ..shapes import (as_dim, as_shape, broadcast_shapes, dims_match, fmt_shape,
                      normalize_axes, normalize_axis, numel, shapes_equal)
from .. import simplify as simp
from . import batching
from ..types import Axis, IntTuple, Result, ShapeLike, TensorLike


def _shape_latex(name, param):
    """``\\operatorname{name}_{params}(x)``: the parameters as a subscript."""
    def spell(x, **params):
        return rf"\operatorname{{{name}}}_{{{params[param]:raw}}}\left({x}\right)"
    return spell


def _reshape_batch(node, ins, size):
    return apply("reshape", ins[0][0], shape=(size,) + node.shape)


def _reshape_elements(ctx, x):
    return numpy.reshape(x, ctx.shape)


def _is_matrix_transpose(axes):
    return tuple(axes.value) == (1, 0)


def _transpose_params(op, shapes, axes=None):
    rank = len(shapes[0])
    if axes is None:
        return (("axes", tuple(reversed(range(rank)))),)
    axes = tuple(normalize_axis(a, rank, op) for a in axes)
    if sorted(axes) != list(range(rank)):
        raise ShapeError(f"transpose: axes {axes} are not a permutation of {tuple(range(rank))}")
    return (("axes", axes),)


def _transpose_code(fn):
    def spell(x, axes):
        return f"{x:atom}.T" if _is_matrix_transpose(axes) else f"{fn}({x}, {axes})"
    return spell


def _transpose_latex(x, axes):
    if _is_matrix_transpose(axes):
        return f"{x:pow}^{{T}}"
    listed = ",".join(str(a) for a in axes.value)
    return rf"\operatorname{{transpose}}_{{{listed}}}\left({x}\right)"


def _transpose_batch(node, ins, size):
    return apply("transpose", ins[0][0], axes=(0,) + tuple(a + 1 for a in node.attrs["axes"]))


@defop("transpose", ("x",), view=True, kind=integer_kind, bounds=same_bounds,
       wrapper=True, params=_transpose_params, precedence="Atom",
       latex_precedence="Pow",
       shape=lambda op, s, a: tuple(s[0][i] for i in a["axes"]), simplify=simp.transpose,
       text=_transpose_code("transpose"), latex=_transpose_latex,
       numpy=_transpose_code("numpy.transpose"), torch=_transpose_code("torch.permute"),
       matrix=lambda m, node, x: m.transpose(node, x),
       elements=lambda ctx, x: numpy.transpose(x, ctx.attrs["axes"]),
       batch=_transpose_batch)
def transpose(x: TensorLike, axes: Sequence[int] | None = None) -> Result:
    """Permute axes (reverse them when ``axes`` is None, like ``x.T``)."""
    return apply("transpose", x, axes=axes)


@public
def swapaxes(x, axis1, axis2):
    """x with two axes exchanged (``numpy.swapaxes``, torch's ``transpose(dim0, dim1)``)."""
    rank = len(getattr(x, "shape", ()))
    if rank == 0:
        return x
    perm = list(range(rank))
    a, b = normalize_axis(axis1, rank, "transpose"), normalize_axis(axis2, rank, "transpose")
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, tuple(perm))


def _reshape_params(op, shapes, shape):
    src = shapes[0]
    if isinstance(shape, (int, str)):
        shape = (shape,)
    dims = [d if d == -1 else as_dim(d) for d in shape]
    if dims.count(-1) > 1:
        raise ShapeError(f"reshape: only one dim can be -1, got {tuple(shape)}")
    total = numel(src)
    if -1 in dims:
        rest = numel([d for d in dims if d != -1])
        inferred = sympy.simplify(sympy.sympify(total) / rest)
        if not (inferred.is_integer or inferred.is_Symbol):
            raise ShapeError(f"reshape: cannot infer -1 from {fmt_shape(src)} -> {tuple(shape)}")
        dims[dims.index(-1)] = int(inferred) if inferred.is_Integer else inferred
    if not dims_match(numel(dims), total):
        raise ShapeError(f"reshape: cannot reshape {fmt_shape(src)} ({total} elements) "
                         f"into {fmt_shape(tuple(dims))} ({numel(dims)} elements)")
    return (("shape", tuple(dims)),)


@defop("reshape", ("x",), view=True, kind=integer_kind, bounds=same_bounds,
       wrapper=True, params=_reshape_params, shape=lambda op, s, a: a["shape"],
       simplify=simp.reshape_like, text="reshape({x}, {shape})",
       latex=_shape_latex("reshape", "shape"), numpy="numpy.reshape({x}, {shape})",
       torch="torch.reshape({x}, {shape})", matrix=lambda m, node, x: m.reshape(node, x),
       elements=_reshape_elements, batch=_reshape_batch)
def reshape(x: TensorLike, shape: ShapeLike) -> Result:
    """x with the same elements in another shape (one dim may be -1: inferred)."""
    return apply("reshape", x, shape=shape)


def _squeeze_params(op, shapes, axis=None):
    src = shapes[0]
    if axis is None:
        axes = tuple(i for i, d in enumerate(src) if d == 1)
    else:
        axes = normalize_axes(axis, len(src), op)
        for a in axes:
            if src[a] != 1:
                raise ShapeError(f"squeeze: axis {a} of shape {fmt_shape(src)} has size "
                                 f"{src[a]}, not 1")
    return (("axis", axes),)


@defop("squeeze", ("x",), view=True, kind=integer_kind, bounds=same_bounds, wrapper=True,
       params=_squeeze_params,
       shape=lambda op, s, a: tuple(d for i, d in enumerate(s[0]) if i not in a["axis"]),
       simplify=simp.reshape_like, text="squeeze({x}, {axis})",
       latex=_shape_latex("squeeze", "axis"), numpy="numpy.squeeze({x}, axis={axis})",
       torch="torch.squeeze({x}, dim={axis})", matrix=lambda m, node, x: m.reshape(node, x),
       elements=_reshape_elements, batch=_reshape_batch)
def squeeze(x: TensorLike, axis: Axis = None) -> Result:
    """x without its size-1 axes (all of them, or those in ``axis``, which must be 1)."""
    return apply("squeeze", x, axis=axis)


def _unsqueeze_params(op, shapes, axis):
    rank = len(shapes[0]) + 1
    return (("axis", normalize_axis(axis, rank, op)),)


def _unsqueeze_shape(op, shapes, attrs):
    s = list(shapes[0])
    s.insert(attrs["axis"], 1)
    return tuple(s)


@defop("unsqueeze", ("x",), view=True, kind=integer_kind, bounds=same_bounds,
       wrapper=True, params=_unsqueeze_params, shape=_unsqueeze_shape,
       simplify=simp.reshape_like, text="unsqueeze({x}, {axis})",
       latex=_shape_latex("unsqueeze", "axis"), numpy="numpy.expand_dims({x}, {axis})",
       torch="torch.unsqueeze({x}, {axis})", matrix=lambda m, node, x: m.reshape(node, x),
       elements=_reshape_elements, batch=_reshape_batch,
       torch_names=("torch.unsqueeze", "torch.Tensor.unsqueeze"))
def unsqueeze(x: TensorLike, axis: int) -> Result:
    """x with a new size-1 axis at ``axis``."""
    return apply("unsqueeze", x, axis=axis)


def _broadcast_params(op, shapes, shape):
    target = as_shape(shape)
    got = broadcast_shapes(shapes[0], target, op=op)
    if not shapes_equal(got, target):
        raise ShapeError(f"broadcast_to: cannot broadcast shape {fmt_shape(shapes[0])} "
                         f"to {fmt_shape(target)}")
    return (("shape", target),)


def _broadcast_batch(node, ins, size):
    v = batching.lift(ins[0][0], len(node.shape), size)
    return apply("broadcast_to", v, shape=(size,) + node.shape)


@defop("broadcast_to", ("x",), bounds=same_bounds, wrapper=True, params=_broadcast_params,
       shape=lambda op, s, a: a["shape"],
       kind=lambda op, inputs: inputs[0].kind, bool_inputs=True, readonly=True,
       simplify=simp.broadcast, text="broadcast_to({x}, {shape})",
       latex=_shape_latex("broadcast", "shape"), numpy="numpy.broadcast_to({x}, {shape})",
       torch="torch.broadcast_to({x}, {shape})",
       matrix=lambda m, node, x: m.lift(node.inputs[0], node.shape),
       elements=lambda ctx, x: numpy.broadcast_to(x, ctx.shape), batch=_broadcast_batch)
def broadcast_to(x: TensorLike, shape: ShapeLike) -> Result:
    """x broadcast to ``shape`` (NumPy's rules)."""
    return apply("broadcast_to", x, shape=shape)


def _flip_params(op, shapes, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return (("axis", tuple(sorted(set(normalize_axes(axes, len(shapes[0]), op))))),)


def _flip_simplify(inputs, attrs, shape):
    (x,) = inputs
    if not attrs["axis"]:
        return x
    if x.op == "flip" and x.attrs["axis"] == attrs["axis"]:
        return x.inputs[0]
    return None


@defop("flip", ("x",), kind=integer_kind, params=_flip_params, shape=lambda op, s, a: s[0],
       simplify=_flip_simplify, readonly=True,
       text=lambda x, axis: f"flip({x}, axis={axis.value[0] if len(axis.value) == 1 else axis})",
       latex=_shape_latex("flip", "axis"), numpy="numpy.flip({x}, {axis})",
       torch="torch.flip({x}, {axis})",
       elements=lambda ctx, x: numpy.flip(x, ctx.attrs["axis"]), batch=batching.along_axes)
def flip(x: TensorLike, axis: IntTuple) -> Result:
    """x with the order of its elements reversed along ``axis`` (an int or a tuple)."""
    return apply("flip", x, axis=axis)
