"""Ops that move elements without arithmetic and read as themselves in a formula: ``roll``
(a cyclic shift, torch.roll), ``take_diagonal`` (a diagonal of any offset between any two
axes, torch.diagonal) and its adjoint ``diag_embed`` (values written on such a diagonal of
zeros, torch.diag_embed). Each one's gradient is its partner (roll by the opposite shifts,
diagonal <-> diag_embed), as in PyTorch's derivatives.yaml. Derivatives: rules/layout.yaml.
"""
import numpy
import sympy

from ...errors import ShapeError
from ..build import apply
from ..opdef import defop
from ..shapes import fmt_shape, normalize_axis
from . import batching, elements


# ----- roll ------------------------------------------------------------------------------------

def _roll_params(op, shapes, shifts, axis):
    shifts = (shifts,) if isinstance(shifts, int) else tuple(int(s) for s in shifts)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(shifts) != len(axes):
        raise ShapeError(f"roll: {len(shifts)} shifts for {len(axes)} axes; give one shift "
                         "per axis")
    axes = tuple(normalize_axis(a, len(shapes[0]), op) for a in axes)
    return (("shifts", shifts), ("axis", axes))


def _roll_simplify(inputs, attrs, shape):
    (x,) = inputs
    if all(isinstance(shape[a], int) and (shape[a] == 0 or s % shape[a] == 0)
           for s, a in zip(attrs["shifts"], attrs["axis"])):
        return x
    return None


def _roll_latex(x, shifts, axis):
    return (rf"\operatorname{{roll}}_{{{shifts:raw};{axis:raw}}}\left({x}\right)")


@defop("roll", ("x",), params=_roll_params, shape=lambda op, s, a: s[0],
       simplify=_roll_simplify, fresh=True,
       text="roll({x}, {shifts}, axis={axis})", latex=_roll_latex,
       numpy="numpy.roll({x}, {shifts}, {axis})", torch="torch.roll({x}, {shifts}, {axis})",
       elements=lambda ctx, x: numpy.roll(x, ctx.attrs["shifts"], ctx.attrs["axis"]),
       batch=batching.along_axes)
def roll(x, shifts, axis):
    """x shifted cyclically by ``shifts`` along ``axis`` (ints or tuples of equal length):
    element i moves to i + shift (mod the size), like numpy.roll and torch.roll."""
    return apply("roll", x, shifts=shifts, axis=axis)


# ----- diagonals -------------------------------------------------------------------------------

def _diagonal_length(n1, n2, offset):
    """The length of the diagonal ``offset`` of an n1 x n2 matrix (0 when it misses it)."""
    n = sympy.Min(sympy.sympify(n1), sympy.sympify(n2) - offset) if offset >= 0 else \
        sympy.Min(sympy.sympify(n1) + offset, sympy.sympify(n2))
    n = sympy.Max(n, 0)
    return int(n) if n.is_Integer else n


def _two_axes(op, rank, axis1, axis2):
    a1, a2 = normalize_axis(axis1, rank, op), normalize_axis(axis2, rank, op)
    if a1 == a2:
        raise ShapeError(f"{op}: the two axes must differ, got {axis1} and {axis2} for rank "
                         f"{rank}")
    return a1, a2


def _take_diagonal_params(op, shapes, offset=0, axis1=0, axis2=1):
    if len(shapes[0]) < 2:
        raise ShapeError(f"{op}: needs an input of rank >= 2, got shape "
                         f"{fmt_shape(shapes[0])}")
    a1, a2 = _two_axes(op, len(shapes[0]), axis1, axis2)
    return (("offset", int(offset)), ("axis1", a1), ("axis2", a2))


def _take_diagonal_shape(op, shapes, attrs):
    s, a1, a2 = shapes[0], attrs["axis1"], attrs["axis2"]
    rest = tuple(d for i, d in enumerate(s) if i not in (a1, a2))
    return rest + (_diagonal_length(s[a1], s[a2], attrs["offset"]),)


def _diagonal_latex(x, offset, axis1, axis2):
    return rf"\operatorname{{diag}}_{{{offset:raw};{axis1:raw},{axis2:raw}}}\left({x}\right)"


def _take_diagonal_batch(node, ins, size):
    a = node.attrs
    return take_diagonal(ins[0][0], a["offset"], a["axis1"] + 1, a["axis2"] + 1)


@defop("take_diagonal", ("x",), params=_take_diagonal_params, shape=_take_diagonal_shape,
       readonly=True,
       text="take_diagonal({x}, offset={offset}, axis1={axis1}, axis2={axis2})",
       latex=_diagonal_latex,
       numpy="numpy.diagonal({x}, {offset}, {axis1}, {axis2})",
       torch="torch.diagonal({x}, {offset}, {axis1}, {axis2})",
       elements=lambda ctx, x: numpy.diagonal(x, ctx.attrs["offset"], ctx.attrs["axis1"],
                                              ctx.attrs["axis2"]).copy(),
       batch=_take_diagonal_batch)
def take_diagonal(x, offset=0, axis1=0, axis2=1):
    """The diagonal ``offset`` (above the main one when positive) of the matrices spanned by
    ``axis1`` and ``axis2``, as a last axis after the remaining ones (torch.diagonal)."""
    return apply("take_diagonal", x, offset=offset, axis1=axis1, axis2=axis2)


def _diag_embed_params(op, shapes, offset=0, axis1=-2, axis2=-1, shape=None):
    s = shapes[0]
    if not s:
        raise ShapeError(f"{op}: needs an input of rank >= 1 (its last axis is the diagonal)")
    rank = len(s) + 1
    a1, a2 = _two_axes(op, rank, axis1, axis2)
    offset = int(offset)
    if shape is None:
        n = sympy.sympify(s[-1]) + abs(offset)
        n = int(n) if n.is_Integer else n
        shape = list(s[:-1])
        for a in sorted((a1, a2)):
            shape.insert(a, n)
    shape = tuple(shape)
    want = _take_diagonal_shape(op, [shape], {"offset": offset, "axis1": a1, "axis2": a2})
    if len(shape) != rank or sympy.simplify(sympy.sympify(want[-1]) - s[-1]) != 0:
        raise ShapeError(f"{op}: a diagonal of shape {fmt_shape(s)} (offset {offset}) does not "
                         f"fit a result of shape {fmt_shape(shape)} at axes ({a1}, {a2})")
    return (("offset", offset), ("axis1", a1), ("axis2", a2), ("shape", shape))


_DIAG_EMBED = (
    "def _diag_embed(x, offset, axis1, axis2, shape):\n"
    "    x = numpy.asarray(x)\n"
    "    out = numpy.zeros(shape, dtype=x.dtype if x.dtype.kind in 'fO' else float)\n"
    "    view = numpy.moveaxis(out, (axis1, axis2), (-2, -1))\n"
    "    i = numpy.arange(x.shape[-1])\n"
    "    view[..., i + max(-offset, 0), i + max(offset, 0)] = x\n"
    "    return out")
_DIAG_EMBED_TORCH = (
    "def _diag_embed(x, offset, axis1, axis2, shape):\n"
    "    if not isinstance(x, torch.Tensor):\n"
    "        x = torch.as_tensor(x, dtype=torch.float64)\n"
    "    out = torch.zeros(shape, dtype=x.dtype, device=x.device)\n"
    "    view = torch.movedim(out, (axis1, axis2), (-2, -1))\n"
    "    i = torch.arange(x.shape[-1], device=x.device)\n"
    "    view[..., i + max(-offset, 0), i + max(offset, 0)] = x\n"
    "    return out")


def _diag_embed_elements(ctx, x):
    a = ctx.attrs
    out = elements.zeros(ctx.shape)
    view = numpy.moveaxis(out, (a["axis1"], a["axis2"]), (-2, -1))
    i = numpy.arange(x.shape[-1])
    view[..., i + max(-a["offset"], 0), i + max(a["offset"], 0)] = x
    return out


def _diag_embed_batch(node, ins, size):
    a = node.attrs
    return diag_embed(ins[0][0], a["offset"], a["axis1"] + 1, a["axis2"] + 1,
                      (size,) + tuple(a["shape"]))


@defop("diag_embed", ("x",), params=_diag_embed_params, shape=lambda op, s, a: a["shape"],
       fresh=True,
       text="diag_embed({x}, offset={offset}, axis1={axis1}, axis2={axis2}, shape={shape})",
       latex=lambda x, offset, axis1, axis2, shape: (
           rf"\operatorname{{diag\_embed}}_{{{offset:raw};{axis1:raw},{axis2:raw}}}"
           rf"\left({x}\right)"),
       numpy=("_diag_embed({x}, {offset}, {axis1}, {axis2}, {shape})",
              {"_diag_embed": _DIAG_EMBED}),
       torch=("_diag_embed({x}, {offset}, {axis1}, {axis2}, {shape})",
              {"_diag_embed": _DIAG_EMBED_TORCH}),
       elements=_diag_embed_elements, batch=_diag_embed_batch)
def diag_embed(x, offset=0, axis1=-2, axis2=-1, shape=None):
    """Zeros with the last axis of ``x`` written on the diagonal ``offset`` of the matrices
    spanned by ``axis1`` and ``axis2`` of the result (torch.diag_embed); ``shape``, the
    result's, defaults to square matrices just large enough. The adjoint of
    ``take_diagonal``."""
    return apply("diag_embed", x, offset=offset, axis1=axis1, axis2=axis2, shape=shape)
