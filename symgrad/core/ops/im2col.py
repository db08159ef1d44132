"""im2col and col2im: ``unfold`` (torch's F.unfold, the sliding blocks of an image as
columns) and ``fold`` (F.fold, the columns summed back into an image). Each is the
other's adjoint, so each one's gradient is the other (rules/conv.yaml). As in torch,
the image has two spatial dims: (N, C, H, W) or unbatched (C, H, W); padding is zeros,
the same on both sides. The NumPy code and per-element forms are ``conv_kernels``'.
"""
import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply
from ..opdef import defop
from ..shapes import as_shape, dims_match, fmt_shape, numel
from . import conv_kernels
from .conv import _compact, _helpers, conv_out, int_tuple
from ..types import IntTuple, Result, ShapeLike, TensorLike

ND = 2


def _block_params(op, kernel_size, dilation, padding, stride):
    return (("kernel_size", int_tuple(op, "kernel_size", kernel_size, ND, 1)),
            ("dilation", int_tuple(op, "dilation", dilation, ND, 1)),
            ("padding", int_tuple(op, "padding", padding, ND, 0)),
            ("stride", int_tuple(op, "stride", stride, ND, 1)))


def _blocks(attrs, size):
    """The number of block positions along each spatial dim."""
    return tuple(conv_out(L, p, p, k, s, d) for L, k, d, p, s in zip(
        size, attrs["kernel_size"], attrs["dilation"], attrs["padding"], attrs["stride"]))


def _unfold_params(op, shapes, kernel_size, dilation=1, padding=0, stride=1):
    (x,) = shapes
    if len(x) not in (ND + 1, ND + 2):
        raise ShapeError(f"{op}: needs an input (N, C, H, W) or (C, H, W), got {fmt_shape(x)}"
                         " (torch's unfold takes images with two spatial dims only)")
    return _block_params(op, kernel_size, dilation, padding, stride)


def _unfold_shape(op, shapes, attrs):
    (x,) = shapes
    blocks = _blocks(attrs, x[-ND:])
    if any(isinstance(b, int) and b < 1 for b in blocks):
        raise ShapeError(f"{op}: input {fmt_shape(x)} is smaller than the (dilated, padded) "
                         f"kernel {attrs['kernel_size']}")
    return x[:-ND - 1] + (numel((x[-ND - 1],) + attrs["kernel_size"]), numel(blocks))


def _fold_params(op, shapes, output_size, kernel_size, dilation=1, padding=0, stride=1):
    (x,) = shapes
    if len(x) not in (2, 3):
        raise ShapeError(f"{op}: needs an input (N, C*prod(kernel_size), L) or unbatched, got "
                         f"{fmt_shape(x)}")
    size = as_shape(output_size)[-ND:] if isinstance(output_size, (tuple, list)) \
        else as_shape((output_size,) * ND)
    if len(size) != ND:
        raise ParameterError(f"{op}: output_size needs {ND} sizes, got {output_size!r}")
    params = (("output_size", size),) + _block_params(op, kernel_size, dilation, padding,
                                                      stride)
    attrs = dict(params)
    k = numel(attrs["kernel_size"])
    blocks = numel(_blocks(attrs, size))
    if isinstance(x[-2], int) and x[-2] % k or not dims_match(x[-1], blocks):
        raise ShapeError(f"{op}: input {fmt_shape(x)} must be (N, C*{k}, {blocks}) for "
                         f"kernel_size={attrs['kernel_size']} and output_size={size}")
    return params


def _fold_shape(op, shapes, attrs):
    (x,) = shapes
    c = sympy.sympify(x[-2]) / numel(attrs["kernel_size"])
    return x[:-2] + (int(c) if c.is_Integer else c,) + attrs["output_size"]


def _text(name, first=""):
    def spell(x, kernel_size, dilation, padding, stride, output_size=None):
        parts = [f"output_size={output_size}"] if output_size is not None else []
        parts.append(f"kernel_size={_compact(kernel_size.value)}")
        for key, p, default in ((dilation, "dilation", 1), (padding, "padding", 0),
                                (stride, "stride", 1)):
            if any(v != default for v in key.value):
                parts.append(f"{p}={_compact(key.value)}")
        return f"{name}({x}, {', '.join(parts)})"
    return spell


def _latex(name):
    def spell(x, **params):
        return rf"\operatorname{{{name}}}\left({x}\right)"
    return spell


def _pairs(padding):
    return str(tuple((p, p) for p in padding.value))


def _unfold_elements(ctx, x):
    a = ctx.attrs
    return conv_kernels._unfold(x, a["kernel_size"], a["stride"],
                                [(p, p) for p in a["padding"]], a["dilation"])


def _fold_elements(ctx, x):
    a = ctx.attrs
    size = tuple(ctx.size(d) for d in a["output_size"])
    return conv_kernels._fold(x, size, a["kernel_size"], a["stride"],
                              [(p, p) for p in a["padding"]], a["dilation"])


def _matrix(name):
    def form(m, node, x):
        a = node.attrs
        data = {"kernel_size": _compact(a["kernel_size"])}
        for key, default in (("dilation", 1), ("padding", 0), ("stride", 1)):
            if any(v != default for v in a[key]):
                data[key] = _compact(a[key])
        return m.fn(name, x, data=data)
    return form


@defop("unfold", ("x",), params=_unfold_params, shape=_unfold_shape,
       text=_text("unfold"), latex=_latex("unfold"),
       numpy=(lambda x, kernel_size, dilation, padding, stride:
              f"_unfold({x}, {kernel_size}, {stride}, {_pairs(padding)}, {dilation})",
              _helpers("_unfold")),
       torch="torch.nn.functional.unfold({x}, {kernel_size}, {dilation}, {padding}, {stride})",
       matrix=_matrix("unfold"), elements=_unfold_elements, fresh=True)
def unfold(x: TensorLike, kernel_size: IntTuple, dilation: IntTuple = 1, padding: IntTuple = 0,
           stride: IntTuple = 1) -> Result:
    """torch's F.unfold (im2col): (N, C, H, W) -> (N, C*kh*kw, L), one column per block."""
    return apply("unfold", x, kernel_size=kernel_size, dilation=dilation, padding=padding,
                 stride=stride)


@defop("fold", ("x",), params=_fold_params, shape=_fold_shape,
       text=_text("fold"), latex=_latex("fold"),
       numpy=(lambda x, output_size, kernel_size, dilation, padding, stride:
              (f"_fold({x}, {output_size}, {kernel_size}, {stride}, {_pairs(padding)}, "
               f"{dilation})"), _helpers("_fold")),
       torch=("torch.nn.functional.fold({x}, {output_size}, {kernel_size}, {dilation}, "
              "{padding}, {stride})"),
       matrix=_matrix("fold"), elements=_fold_elements, fresh=True)
def fold(x: TensorLike, output_size: ShapeLike, kernel_size: IntTuple, dilation: IntTuple = 1,
         padding: IntTuple = 0, stride: IntTuple = 1) -> Result:
    """torch's F.fold (col2im): (N, C*kh*kw, L) -> (N, C, *output_size), overlapping
    values summed; the adjoint of ``unfold``."""
    return apply("fold", x, output_size=output_size, kernel_size=kernel_size,
                 dilation=dilation, padding=padding, stride=stride)
