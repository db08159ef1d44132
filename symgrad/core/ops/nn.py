"""Neural-network ops: softmax, log_softmax, logsumexp, one_hot and the losses
cross_entropy, mse_loss and binary_cross_entropy_with_logits, with numerically stable
forward code (max-shifted exponentials, log1p(exp(-|x|))). Derivatives: rules/nn.yaml.
"""
import numpy
import sympy

from ...errors import ParameterError, ShapeError
from ..build import apply
from ..opdef import defop
from ..shapes import as_dim, fmt_shape, shapes_equal
from .. import simplify as simp
from . import batching, elements
from .functions import AsFloat, Softplus
from .pointwise import pointwise_shape
from .reductions import REDUCE_PARAMS, axis_params, reduce_latex, reduce_params, \
    reduce_shape, reduce_text, same_shape
from ..types import Axis, Result, TensorLike

REDUCTIONS = ("mean", "sum", "none")

# x - max is a fresh array: exp and the normalisation work in it, not in new ones
_SOFTMAX = ("def _softmax(x, axis):\n"
            "    e = x - numpy.max(x, axis=axis, keepdims=True, initial=-math.inf)\n"
            "    if type(e) is not numpy.ndarray or e.dtype.kind != 'f':\n"
            "        e = numpy.exp(e)\n"
            "        return e / numpy.sum(e, axis=axis, keepdims=True)\n"
            "    numpy.exp(e, out=e)\n"
            "    e /= numpy.sum(e, axis=axis, keepdims=True)\n"
            "    return e")
_LOG_SOFTMAX = ("def _log_softmax(x, axis):\n"
                "    y = x - numpy.max(x, axis=axis, keepdims=True, initial=-math.inf)\n"
                "    s = numpy.log(numpy.sum(numpy.exp(y), axis=axis, keepdims=True))\n"
                "    if type(y) is not numpy.ndarray or y.dtype != s.dtype:\n"
                "        return y - s\n"
                "    y -= s\n"
                "    return y")
_LOGSUMEXP = ("def _logsumexp(x, axis, keepdims):\n"
              "    m = numpy.max(x, axis=axis, keepdims=True, initial=-math.inf)\n"
              "    m = numpy.where(numpy.isfinite(m), m, 0.0)\n"
              "    r = numpy.log(numpy.sum(numpy.exp(x - m), axis=axis, keepdims=True)) + m\n"
              "    return r if keepdims else numpy.squeeze(r, axis=axis)")
# Class indices are checked where they are used: one past the classes is an error in
# torch, and would silently select nothing (or the wrong class) here.
_CLASSES = (
    "def _classes(t, n):\n"
    "    t = numpy.asarray(t)\n"
    "    if t.size and not (numpy.all(t >= 0) and numpy.all(t < n)\n"
    "                       and numpy.all(t == numpy.floor(t))):\n"
    "        bad = t[~((t >= 0) & (t < n) & (t == numpy.floor(t)))].ravel()[0]\n"
    "        raise ArgumentError('class indices must be integers in [0, %d), got %r' % (n, bad))\n"
    "    return t.astype(numpy.int64)")
_CLASSES_TORCH = (
    "def _classes_t(t, n):\n"
    "    if t.device.type == 'meta' or torch.compiler.is_compiling():\n"
    "        return t.long()\n"
    "    if t.numel() and not bool(((t >= 0) & (t < n) & (t == torch.floor(t))).all()):\n"
    "        bad = t[~((t >= 0) & (t < n) & (t == torch.floor(t)))].reshape(-1)[0]\n"
    "        raise ArgumentError('class indices must be integers in [0, %d), got %r' "
    "% (n, float(bad)))\n"
    "    return t.long()")
_CROSS_ENTROPY = (
    "def _cross_entropy(x, t, probabilities, reduction):\n"
    "    lsm = _log_softmax(x, -1)\n"
    "    if probabilities:\n"
    "        loss = -numpy.sum(t * lsm, axis=-1)\n"
    "    else:\n"
    "        t = numpy.expand_dims(_classes(t, x.shape[-1]), -1)\n"
    "        loss = -numpy.take_along_axis(lsm, t, -1)[..., 0]\n"
    "    if reduction == 'none':\n"
    "        return loss\n"
    "    return numpy.mean(loss) if reduction == 'mean' else numpy.sum(loss)")


def _exp(x):
    return elements.vectorize(sympy.exp)(x)


def _softmax_elements(ctx, x):
    e = _exp(x)
    return e / numpy.sum(e, axis=ctx.attrs["axis"], keepdims=True)


def _log_softmax_elements(ctx, x, axis=None):
    axis = ctx.attrs["axis"] if axis is None else axis
    e = _exp(x)
    return x - elements.vectorize(sympy.log)(numpy.sum(e, axis=axis, keepdims=True))


def _vector_or_call(name):
    """Matrix notation: softmax(x) over the last axis (a vector's, a matrix's rows), the
    call with its axis otherwise."""
    def form(m, node, x):
        last = node.attrs["axis"] == len(node.inputs[0].shape) - 1
        return m.fn(name, x) if last else m.call(node, x)
    return form


@defop("softmax", ("x",), params=axis_params, shape=same_shape,
       text="softmax({x}, axis={axis})",
       latex=r"\operatorname{{softmax}}_{{{axis}}}\left({x}\right)",
       numpy=("_softmax({x}, {axis})", {"_softmax": _SOFTMAX}),
       numpy_text="numpy.exp({x:add} - numpy.logaddexp.reduce({x}, axis={axis}, keepdims=True))",
       torch="torch.softmax({x}, {axis})", matrix=_vector_or_call("softmax"),
       elements=_softmax_elements, batch=batching.along_axes)
def softmax(x: TensorLike, axis: int = -1) -> Result:
    """exp(x) / sum(exp(x)) along ``axis``, computed with the max subtracted. A 0-d x is
    one element, as in torch (its softmax is 1)."""
    return _over_one_element("softmax", x, axis)


@defop("log_softmax", ("x",), params=axis_params, shape=same_shape,
       text="log_softmax({x}, axis={axis})",
       latex=r"\operatorname{{log\_softmax}}_{{{axis}}}\left({x}\right)",
       numpy=("_log_softmax({x}, {axis})", {"_log_softmax": _LOG_SOFTMAX}),
       numpy_text="{x:add} - numpy.logaddexp.reduce({x}, axis={axis}, keepdims=True)",
       torch="torch.log_softmax({x}, {axis})", matrix=_vector_or_call("log_softmax"),
       elements=_log_softmax_elements, batch=batching.along_axes)
def log_softmax(x: TensorLike, axis: int = -1) -> Result:
    """x - logsumexp(x) along ``axis``, stable for large x (0 for a 0-d x, as in torch)."""
    return _over_one_element("log_softmax", x, axis)


def _over_one_element(op, x, axis):
    """torch's one-axis ops accept a 0-d tensor as a vector of one element (axis 0 or -1)."""
    from .shape import reshape
    if getattr(x, "shape", None) == () and axis in (0, -1):
        return reshape(apply(op, reshape(x, (1,)), axis=0), ())
    return apply(op, x, axis=axis)


def _logsumexp_text(x, axis, keepdims, full):
    """NumPy's own reduction of logaddexp (over every axis: axis=None, not its default 0)."""
    if full.value and not keepdims.value:
        return f"numpy.logaddexp.reduce({x}, axis=None)"
    return reduce_text("numpy.logaddexp.reduce")(x, axis, keepdims, full)


@defop("logsumexp", ("x",), params=reduce_params, shape=reduce_shape,
       simplify=simp.over_no_axes(None),
       sympy_params=REDUCE_PARAMS, text=reduce_text("logsumexp"),
       latex=reduce_latex("logsumexp"),
       numpy=("_logsumexp({x}, {axis}, {keepdims})", {"_logsumexp": _LOGSUMEXP}),
       numpy_text=_logsumexp_text,
       torch="torch.logsumexp({x}, dim={axis}, keepdim={keepdims})",
       elements=elements.reduce(lambda v: sympy.log(sympy.Add(*[sympy.exp(e) for e in v]))),
       batch=batching.along_axes,
       torch_names=("torch.logsumexp", "torch.special.logsumexp", "torch.Tensor.logsumexp"))
def logsumexp(x: TensorLike, axis: Axis = None, keepdims: bool = False) -> Result:
    """log(sum(exp(x))) over ``axis``, stable for large x."""
    return apply("logsumexp", x, axis=axis, keepdims=keepdims)


# ----- classes -------------------------------------------------------------------------------

def _one_hot_params(op, shapes, num_classes):
    if not isinstance(num_classes, int) and not isinstance(num_classes, (str, sympy.Symbol)):
        raise ParameterError(f"one_hot: num_classes must be an int or a dim name, "
                        f"got {num_classes!r}")
    return (("num_classes", as_dim(num_classes)),)


def one_hot_elements(t, classes):
    """One-hot rows of the class indices in the object array ``t``."""
    out = numpy.empty(t.shape + (classes,), dtype=object)
    for idx in numpy.ndindex(*out.shape):
        out[idx] = AsFloat(sympy.Eq(t[idx[:-1]], idx[-1]))
    return out


@defop("one_hot", ("target",), params=_one_hot_params,
       shape=lambda op, s, a: s[0] + (a["num_classes"],), differentiable=False,
       text="one_hot({target}, {num_classes})",
       latex=r"\operatorname{{onehot}}\left({target}, {num_classes}\right)",
       numpy=("numpy.equal(numpy.expand_dims(_classes({target}, {num_classes}), -1), "
              "numpy.arange({num_classes})).astype(numpy.float64)", {"_classes": _CLASSES}),
       torch=("torch.nn.functional.one_hot(_classes_t({target}, {num_classes}), "
              "{num_classes}).to(_dt)", {"_classes_t": _CLASSES_TORCH}),
       elements=lambda ctx, t: one_hot_elements(t, ctx.shape[-1]))
def one_hot(target: TensorLike, num_classes: int) -> Result:
    """Rows of the identity picked by the class indices in ``target`` (no gradient)."""
    return apply("one_hot", target, num_classes=num_classes)


# ----- losses --------------------------------------------------------------------------------

def _reduction(op, reduction):
    if reduction not in REDUCTIONS:
        raise ParameterError(f"{op}: reduction must be one of {REDUCTIONS}, got {reduction!r}")
    return (("reduction", reduction),)


def _loss_params(op, shapes, reduction="mean"):
    return _reduction(op, reduction)


def _loss_shape(op, shapes, attrs):
    shape = pointwise_shape(op, shapes, attrs)
    return shape if attrs["reduction"] == "none" else ()


def _loss_text(name):
    def spell(reduction, **operands):
        extra = "" if reduction.value == "mean" else f", reduction={reduction}"
        return f"{name}({', '.join(f'{v}' for v in operands.values())}{extra})"
    return spell


def _loss_latex(name):
    def spell(reduction, **operands):
        return rf"\operatorname{{{name}}}\left({', '.join(f'{v}' for v in operands.values())}\right)"
    return spell


def _reduced(module, per_element, reduction):
    r = reduction.value
    if r == "none":
        return per_element
    return f"{module}.{'mean' if r == 'mean' else 'sum'}({per_element})"


def _reduce_elements(per_element, reduction):
    per_element = numpy.asarray(per_element, dtype=object)
    if reduction == "none":
        return per_element
    total = numpy.sum(per_element)
    return total * sympy.Rational(1, per_element.size) if reduction == "mean" else total


def _cross_entropy_params(op, shapes, reduction="mean"):
    x, t = shapes
    if len(x) not in (1, 2):
        raise ShapeError(f"cross_entropy: logits must be (C,) or (N, C), got {fmt_shape(x)}")
    if shapes_equal(t, x):
        probabilities = True
    elif shapes_equal(t, x[:-1]):
        probabilities = False
    else:
        raise ShapeError(
            f"cross_entropy: logits have shape {fmt_shape(x)}, so target must be class "
            f"indices of shape {fmt_shape(x[:-1])} or probabilities of shape {fmt_shape(x)}; "
            f"got {fmt_shape(t)}")
    return (("probabilities", probabilities),) + _reduction(op, reduction)


def _cross_entropy_shape(op, shapes, attrs):
    return shapes[0][:-1] if attrs["reduction"] == "none" else ()


def _cross_entropy_elements(ctx, x, t):
    lsm = _log_softmax_elements(ctx, x, axis=-1)
    hot = t if ctx.attrs["probabilities"] else one_hot_elements(t, x.shape[-1])
    per = numpy.asarray(-numpy.sum(hot * lsm, axis=-1), dtype=object)
    return _reduce_elements(per, ctx.attrs["reduction"])


def _cross_entropy_numpy(logits, target, probabilities, reduction):
    return f"_cross_entropy({logits}, {target}, {probabilities}, {reduction})"


def _cross_entropy_torch(logits, target, probabilities, reduction):
    if probabilities.value:
        return f"torch.nn.functional.cross_entropy({logits}, {target}, reduction={reduction})"
    text = (f"torch.nn.functional.cross_entropy({logits}, _classes_t({target}, "
            f"({logits}).shape[-1]), reduction={reduction})")
    return text, {"_classes_t": _CLASSES_TORCH}


@defop("cross_entropy", ("logits", "target"), params=_cross_entropy_params,
       shape=_cross_entropy_shape,
       text=lambda logits, target, probabilities, reduction: _loss_text("cross_entropy")(
           reduction, logits=logits, target=target),
       latex=lambda logits, target, probabilities, reduction: _loss_latex("CE")(
           reduction, logits=logits, target=target),
       numpy=(_cross_entropy_numpy, {"_log_softmax": _LOG_SOFTMAX, "_classes": _CLASSES,
                                     "_cross_entropy": _CROSS_ENTROPY}),
       torch=_cross_entropy_torch, elements=_cross_entropy_elements)
def cross_entropy(logits: TensorLike, target: TensorLike, reduction: str = 'mean') -> Result:
    """torch's ``F.cross_entropy`` for logits (C,) or (N, C): ``target`` is class
    indices (shape (N,) or ()) or class probabilities (same shape as the logits)."""
    return apply("cross_entropy", logits, target, reduction=reduction)


def _mse_code(module):
    def spell(x, y, reduction):
        return _reduced(module, f"{module}.square({x} - {y:add})", reduction)
    return spell


@defop("mse_loss", ("x", "y"), params=_loss_params, shape=_loss_shape,
       text=_loss_text("mse_loss"), latex=_loss_latex("MSE"), numpy=_mse_code("numpy"),
       torch=_mse_code("torch"), math="({x} - {y:add})**2",
       elements=lambda ctx, x, y: _reduce_elements((x - y) ** 2, ctx.attrs["reduction"]))
def mse_loss(x: TensorLike, y: TensorLike, reduction: str = 'mean') -> Result:
    """Mean (or summed, or elementwise) squared difference, ``F.mse_loss``."""
    return apply("mse_loss", x, y, reduction=reduction)


def _bce_code(module, relu):
    """(1 - y) x + max(-x, 0) + log1p(exp(-|x|)): torch's arrangement, inf (not inf - inf)
    at x = inf."""
    def spell(x, y, reduction):
        per = (f"(1.0 - {y:mul})*{x:mul} + {relu.format(x=f'-{x:mul}')} + "
               f"{module}.log1p({module}.exp(-{module}.abs({x})))")
        return _reduced(module, per, reduction)
    return spell


def _bce_elements(ctx, x, y):
    per = elements.vectorize(Softplus)(x) - x * y
    return _reduce_elements(per, ctx.attrs["reduction"])


@defop("binary_cross_entropy_with_logits", ("x", "y"), params=_loss_params,
       shape=_loss_shape, text=_loss_text("binary_cross_entropy_with_logits"),
       latex=_loss_latex("BCE"), numpy=_bce_code("numpy", "numpy.maximum({x}, 0.0)"),
       torch=_bce_code("torch", "torch.relu({x})"),
       math="((1.0 - {y:mul})*{x:mul} + max(-{x:mul}, 0.0) + math.log1p(math.exp(-abs({x}))))",
       elements=_bce_elements)
def binary_cross_entropy_with_logits(x: TensorLike, y: TensorLike,
                                     reduction: str = 'mean') -> Result:
    """-(y log σ(x) + (1 - y) log(1 - σ(x))), as max(x, 0) - x y + log1p(exp(-|x|))."""
    return apply("binary_cross_entropy_with_logits", x, y, reduction=reduction)
