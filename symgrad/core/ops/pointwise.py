"""Elementwise ops with NumPy broadcasting: arithmetic, exponentials, trigonometry,
activations, comparisons, logic, ``where``, ``clamp``, ``cast`` and ``detach``.

Most are SymPy's own functions (``sympy.sin``), which every printer already knows; the
activations and selections SymPy lacks are SymPy classes of ``functions`` (``Sigmoid``,
``Where``, ...), and their OpDefs here say how every printer spells them.
Derivatives: rules/pointwise.yaml.
"""
import functools
import math
from typing import Callable

import sympy
from sympy import S
from sympy.codegen.cfunctions import expm1 as sym_expm1, log1p as sym_log1p

from ...errors import OperandError, ParameterError
from ..build import apply, make, torch_module
from ..graph import Tensor
from ..opdef import FunctionT, bool_kind, defop, integer_kind, public, same_bounds, same_kind
from ..shapes import broadcast_shapes, fmt_shape
from .. import simplify as simp
from ..types import Result, TensorLike
from .functions import (AsFloat, Clamp, Hypot, IsNan, LogAddExp, Relu, ReluGrad, Sigmoid,
                        Softplus, StopGradient, Where)


@functools.lru_cache(maxsize=None)
def has_scipy():
    """SciPy's ufuncs (erf, expit) are faster than NumPy compositions; SciPy is optional."""
    try:
        import scipy.special  # noqa: F401
        return True
    except ImportError:
        return False


def pointwise_shape(op, shapes, attrs):
    if len(shapes) == 2 and (shapes[0] is shapes[1] or not shapes[0] and not shapes[1]):
        return shapes[0]
    return broadcast_shapes(*shapes, op=op)


def elementwise(name, inputs, sympy_form, specific=None,
                **kw) -> Callable[[FunctionT], FunctionT]:
    """``defop`` of an elementwise op: broadcasting shape, simplification at
    construction, and (by default) the torch callables of the same name."""
    kw.setdefault("torch_names", (f"torch.{name}", f"torch.Tensor.{name}"))
    return defop(name, inputs, sympy=sympy_form, shape=pointwise_shape, pointwise=True,
                 simplify=simp.pointwise(name, specific), **kw)


# ----- arithmetic ------------------------------------------------------------------------

# SymPy turns x/0, 0**-1 and log(0) into ComplexInfinity, which has no sign and no
# printed form; torch computes IEEE values (x/0 = x*inf, 0**-1 = inf, log(0) = -inf).
def _div_expr(attrs, x, y):
    return x * S.Infinity if sympy.sympify(y).is_zero else x / y


def _pow_expr(attrs, x, y):
    if sympy.sympify(x).is_zero and sympy.sympify(y).is_negative:
        return S.Infinity
    if isinstance(x, sympy.Number) and isinstance(y, sympy.Number):
        # Folding constants: SymPy would compute 3**(10**9) exactly (a hang), torch gives
        # inf. Keep SymPy's exact value only when it is a modest finite float.
        value = _float_pow(x, y)
        if not math.isfinite(value) or value == 0 or abs(y) > 64:
            return _ieee(value)
    if isinstance(y, sympy.Float) and abs(y) == 0.5:
        y = S.Half if y > 0 else -S.Half     # torch's sqrt and rsqrt: nan at -inf, -0.0 kept
    return x ** y


def _float_pow(x, y):
    import numpy
    try:
        with numpy.errstate(all="ignore"):
            return float(numpy.float64(float(x)) ** numpy.float64(float(y)))
    except OverflowError:                     # float() of an integer beyond 1e308
        return math.inf if abs(x) > 1 else 0.0


def _ieee(value):
    if math.isnan(value):
        return S.NaN
    if math.isinf(value):
        return S.Infinity if value > 0 else S.NegativeInfinity
    return sympy.Float(value) if value != int(value) else sympy.Integer(int(value))


def _binary(name, sympy_form, specific=None, fresh=False,
            **kw) -> Callable[[TensorLike, TensorLike], Result]:
    @elementwise(name, ("x", "y"), sympy_form, specific, fresh=fresh, **kw)
    def op(x: TensorLike, y: TensorLike) -> Result:
        return apply(name, x, y)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise {name} with NumPy broadcasting."
    return op


def _product_bounds(attrs, a, b):
    ends = [p * q if p and q else 0.0 for p in a for q in b]   # 0 * inf is 0 here
    return min(ends), max(ends)


NONNEGATIVE = (0.0, math.inf)
add = _binary("add", lambda a, x, y: x + y, simp.add, fresh=True, torch_names=(), augmented="+=",
              kind=integer_kind, matrix=lambda m, node, x, y: m.plus(node),
              bounds=lambda attrs, a, b: (a[0] + b[0], a[1] + b[1]))
sub = _binary("sub", lambda a, x, y: x - y, simp.sub, fresh=True, torch_names=(),
              kind=integer_kind, matrix=lambda m, node, x, y: m.minus(node),
              bounds=lambda attrs, a, b: (a[0] - b[1], a[1] - b[0]))
mul = _binary("mul", lambda a, x, y: x * y, simp.mul, fresh=True, kind=integer_kind,
              matrix=lambda m, node, x, y: m.product(node), bounds=_product_bounds,
              torch_names=("torch.mul", "torch.multiply", "torch.Tensor.mul",
                           "torch.Tensor.multiply"))
div = _binary("div", _div_expr, simp.div, fresh=True, torch_names=(),
              matrix=lambda m, node, x, y: m.quotient(node))
pow = _binary("pow", _pow_expr, simp.pow, matrix=lambda m, node, x, y: m.power(node, x, y),
              exact_operands=(1,),
              torch_names=("torch.pow", "torch.float_power", "torch.Tensor.pow",
                           "torch.Tensor.float_power", "torch.Tensor.__pow__"))
def _extremum(cls):
    """Max or Min of two forms; unevaluated when SymPy cannot tell that an argument is
    real (atan2(a, a) of a sum of branches), which it refuses to order."""
    def form(attrs, x, y):
        try:
            return cls(x, y)
        except ValueError:
            return cls(x, y, evaluate=False)
    return form


maximum = _binary("maximum", _extremum(sympy.Max), simp.same, kind=integer_kind,
                  matrix=lambda m, node, x, y: m.fn("max", x, y),
                  torch_names=("torch.maximum", "torch.Tensor.maximum"))
minimum = _binary("minimum", _extremum(sympy.Min), simp.same, kind=integer_kind,
                  matrix=lambda m, node, x, y: m.fn("min", x, y),
                  torch_names=("torch.minimum", "torch.Tensor.minimum"))


@public
def fmax(x: TensorLike, y: TensorLike) -> Result:
    """torch.fmax: the larger of x and y, the number where one of them is nan. The
    gradient goes to the operand chosen, x at a tie (torch's split, not maximum's)."""
    return where(logical_or(ge(x, y), isnan(y)), x, y)


@public
def fmin(x: TensorLike, y: TensorLike) -> Result:
    """torch.fmin: the smaller of x and y, the number where one of them is nan; the
    gradient as fmax's."""
    return where(logical_or(le(x, y), isnan(y)), x, y)


_LOGADDEXP_MATH = ("def _logaddexp(x, y):\n"
                   "    if x == y:\n"
                   "        return x + 0.6931471805599453\n"
                   "    return max(x, y) + math.log1p(math.exp(-abs(x - y)))")
logaddexp = _binary("logaddexp", LogAddExp, text="logaddexp({x}, {y})",
                    latex=r"\log\left(e^{{{x}}} + e^{{{y}}}\right)",
                    numpy="numpy.logaddexp({x}, {y})", torch="torch.logaddexp({x}, {y})",
                    math=("_logaddexp({x}, {y})", {"_logaddexp": _LOGADDEXP_MATH}))
atan2 = _binary("atan2", lambda a, x, y: sympy.atan2(x, y),
                torch_names=("torch.atan2", "torch.arctan2", "torch.Tensor.atan2",
                             "torch.Tensor.arctan2"))
hypot = _binary("hypot", Hypot, text="hypot({x}, {y})",
                latex=r"\sqrt{{{x:pow}^{{2}} + {y:pow}^{{2}}}}",
                numpy="numpy.hypot({x}, {y})", torch="torch.hypot({x}, {y})",
                math="math.hypot({x}, {y})")


# ----- unary -----------------------------------------------------------------------------

def _log_expr(attrs, x):
    return S.NegativeInfinity if sympy.sympify(x).is_zero else sympy.log(x)


def _log1p_expr(attrs, x):
    return S.NegativeInfinity if (sympy.sympify(x) + 1).is_zero else sym_log1p(x)


def _unary(name, sympy_form, *, aliases=(), also=(), specific=None,
           **kw) -> Callable[[TensorLike], Result]:
    """``defop`` of an elementwise function of one operand; ``aliases`` are other torch
    names of it (``torch.<alias>`` and the method), ``also`` more torch callables."""
    names = (name,) + tuple(aliases)
    kw.setdefault("torch_names", tuple(f"torch.{n}" for n in names)
                  + tuple(f"torch.Tensor.{n}" for n in names) + tuple(also))
    kw.setdefault("matrix", lambda m, node, x: m.fn(name, x))
    @elementwise(name, ("x",), sympy_form, specific, **kw)
    def op(x: TensorLike) -> Result:
        return apply(name, x)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise {name}; records a node on symbolic Tensors, computes otherwise."
    return op


def _special(*names):
    return tuple(f"torch.special.{n}" for n in names)


neg = _unary("neg", lambda attrs, x: -x, aliases=("negative",), specific=simp.neg, fresh=True,
             wrapper=True, matrix=lambda m, node, x: m.neg(x),
             bounds=lambda attrs, a: (-a[1], -a[0]))
exp = _unary("exp", lambda attrs, x: sympy.exp(x), bounds=lambda attrs, a: NONNEGATIVE)
log = _unary("log", _log_expr)
log1p = _unary("log1p", _log1p_expr, also=_special("log1p"))
expm1 = _unary("expm1", lambda attrs, x: sym_expm1(x), also=_special("expm1"))
sqrt = _unary("sqrt", lambda attrs, x: sympy.sqrt(x), bounds=lambda attrs, a: NONNEGATIVE)
square = _unary("square", lambda attrs, x: x ** 2, bounds=lambda attrs, a: NONNEGATIVE,
                matrix=lambda m, node, x: m.power(node, x, 2))
sin = _unary("sin", lambda attrs, x: sympy.sin(x))
cos = _unary("cos", lambda attrs, x: sympy.cos(x))
tan = _unary("tan", lambda attrs, x: sympy.tan(x))
asin = _unary("asin", lambda attrs, x: sympy.asin(x), aliases=("arcsin",))
acos = _unary("acos", lambda attrs, x: sympy.acos(x), aliases=("arccos",))
atan = _unary("atan", lambda attrs, x: sympy.atan(x), aliases=("arctan",))
sinh = _unary("sinh", lambda attrs, x: sympy.sinh(x))
cosh = _unary("cosh", lambda attrs, x: sympy.cosh(x))
tanh = _unary("tanh", lambda attrs, x: sympy.tanh(x), also=("torch.nn.functional.tanh",),
              bounds=lambda attrs, a: (-1.0, 1.0))
abs = _unary("abs", lambda attrs, x: sympy.Abs(x), aliases=("absolute",),
             bounds=lambda attrs, a: NONNEGATIVE)
erf = _unary("erf", lambda attrs, x: sympy.erf(x), also=_special("erf"))
sign = _unary("sign", lambda attrs, x: sympy.sign(x), aliases=("sgn",))


def _sigmoid_numpy(x):
    if has_scipy():
        return f"_expit({x})", {"_expit": "from scipy.special import expit as _expit"}
    return f"numpy.exp(-numpy.logaddexp(0.0, -{x:mul}))"


sigmoid = _unary("sigmoid", Sigmoid, text="sigmoid({x})", latex=r"\sigma\left({x}\right)",
                  numpy=_sigmoid_numpy, numpy_text="1/(1 + numpy.exp(-{x:mul}))",
                  torch="torch.sigmoid({x})", jax="jax.nn.sigmoid({x})",
                  math="(1.0/(1.0 + math.exp(-{x:mul})))",
                  matrix=lambda m, node, x: m.fn("σ", x), bounds=lambda attrs, a: (0.0, 1.0),
                  also=_special("expit") + ("torch.nn.functional.sigmoid",))


def _torch_tensor(operand):
    """An operand where torch needs a tensor: a constant (a number, or a quotient of dims
    such as mean's 1/n) as a tensor of the arguments' dtype and device."""
    if operand.is_scalar:
        return f"torch.as_tensor({operand}, dtype=_dt, device=_dev)"
    return f"{operand}"


relu = _unary("relu", Relu, text="relu({x})", latex=r"\operatorname{{relu}}\left({x}\right)",
               numpy="numpy.maximum({x}, 0.0)", torch="torch.relu({x})",
               math="max({x}, 0.0)", also=("torch.nn.functional.relu",),
               bounds=lambda attrs, a: NONNEGATIVE)
@elementwise("relu_grad", ("g", "x"), ReluGrad, text="where({x} <= 0, 0, {g})",
             latex=r"\left[{x} > 0\right] \circ {g:mul}",
             numpy="numpy.where({x} <= 0, 0.0, {g})",
             torch=lambda g, x: f"torch.ops.aten.threshold_backward({_torch_tensor(g)}, "
                                f"{_torch_tensor(x)}, 0.0)",
             math="(0.0 if {x} <= 0 else {g})", torch_names=(), fresh=True,
             specific=simp.relu_grad,
             matrix=lambda m, node, g, x: m.positive_part(node, g, x))
def relu_grad(g, x):
    """relu's gradient applied to ``g``: g where x > 0, else 0 (torch's convention at 0;
    a nan x passes g). One fused kernel in torch code (threshold_backward)."""
    return apply("relu_grad", g, x)


softplus = _unary("softplus", Softplus, text="softplus({x})",
                   latex=r"\operatorname{{softplus}}\left({x}\right)",
                   numpy="numpy.logaddexp(0.0, {x})",
                   torch="torch.logaddexp({x}, torch.zeros_like({x}))",
                   math="(max({x}, 0.0) + math.log1p(math.exp(-abs({x}))))",
                   torch_names=(), bounds=lambda attrs, a: NONNEGATIVE)


# ----- comparisons and logic -------------------------------------------------------------

_FLIPPED = {"gt": "lt", "ge": "le", "lt": "gt", "le": "ge", "eq": "eq", "ne": "ne"}


def _is_constant(x):
    return not isinstance(x, Tensor) or x.is_const


def _comparison(name, relation, sign, aliases=()) -> Callable[[TensorLike, TensorLike], Result]:
    names = (name,) + aliases

    @elementwise(name, ("x", "y"), lambda attrs, x, y: relation(x, y, evaluate=False),
                 kind=bool_kind, differentiable=False, bool_inputs=name in ("eq", "ne"),
                 wrapper=True,
                 matrix=lambda m, node, x, y: m.relation(sign, x, y),
                 torch_names=tuple(f"{p}.{n}" for n in names
                                   for p in ("torch", "torch.Tensor")))
    def op(x: TensorLike, y: TensorLike) -> Result:
        # A constant on the left moves to the right (0 < x is x > 0): torch.gt(0, x) is
        # not valid torch, and one order lets structural hashing share the node.
        if isinstance(y, Tensor) and _is_constant(x) and not _is_constant(y):
            return apply(_FLIPPED[name], y, x)
        return apply(name, x, y)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise comparison {name} with NumPy broadcasting (a boolean Tensor)."
    return op


gt = _comparison("gt", sympy.StrictGreaterThan, ">", ("greater",))
ge = _comparison("ge", sympy.GreaterThan, "≥", ("greater_equal",))
lt = _comparison("lt", sympy.StrictLessThan, "<", ("less",))
le = _comparison("le", sympy.LessThan, "≤", ("less_equal",))
eq = _comparison("eq", sympy.Eq, "=")
ne = _comparison("ne", sympy.Ne, "≠", ("not_equal",))


def _logical(name, relation, absorbing, sign) -> Callable[[TensorLike, TensorLike], Result]:
    @elementwise(name, ("x", "y"), lambda attrs, x, y: relation(x, y, evaluate=False),
                 simp.logical(absorbing), kind=bool_kind, differentiable=False,
                 bool_inputs=True, matrix=lambda m, node, x, y: m.logic(sign, x, y))
    def op(x: TensorLike, y: TensorLike) -> Result:
        return apply(name, x, y)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"Elementwise {name.replace('_', ' ')} of boolean Tensors."
    return op


logical_and = _logical("logical_and", sympy.And, False, "∧")
logical_or = _logical("logical_or", sympy.Or, True, "∨")


@elementwise("logical_not", ("x",), lambda attrs, x: sympy.Not(x), kind=bool_kind,
             differentiable=False, bool_inputs=True, matrix=lambda m, node, x: m.not_(x))
def logical_not(x: TensorLike) -> Result:
    """Elementwise not of a boolean Tensor."""
    return apply("logical_not", x)


@elementwise("isnan", ("x",), IsNan, kind=bool_kind, differentiable=False, wrapper=True,
             text="isnan({x})", latex=r"\operatorname{{isnan}}\left({x}\right)",
             numpy="numpy.isnan({x})", torch="torch.isnan({x})", math="math.isnan({x})",
             matrix=lambda m, node, x: m.fn("isnan", x))
def isnan(x: TensorLike) -> Result:
    """Elementwise test for nan (a boolean Tensor); carries no gradient."""
    return apply("isnan", x)


@defop("cast", ("x",), sympy=AsFloat, shape=pointwise_shape, pointwise=True, wrapper=True,
       simplify=simp.cast, differentiable=False, bool_inputs=True,
       text="float({x})", latex=r"\left[{x}\right]",
       numpy="numpy.where({x}, 1.0, 0.0)", torch="({x}).to(_dt)",
       math="(1.0 if {x} else 0.0)", matrix=lambda m, node, x: m.iverson(x))
def cast(x: TensorLike) -> Result:
    """1.0 where a boolean Tensor holds, 0.0 elsewhere."""
    return apply("cast", x)


# ----- selection -------------------------------------------------------------------------

def _where_kind(op, inputs):
    if inputs[0].kind != "bool":
        raise OperandError(f"where: the condition must be a boolean Tensor (a comparison "
                        f"such as x > 0), got a float Tensor of shape "
                        f"{fmt_shape(inputs[0].shape)}")
    return integer_kind(op, inputs[1:])


def _where_torch(condition, x, y):
    """With two constant branches torch.where would compute in its default dtype."""
    a = _torch_tensor(x) if x.is_scalar and y.is_scalar else f"{x}"
    return f"torch.where({condition}, {a}, {y})"


def _where_latex(condition, x, y):
    return (r"\begin{cases} %s & \text{if } %s \\ %s & \text{otherwise} \end{cases}"
            % (x, condition, y))


@defop("where", ("condition", "x", "y"), sympy=Where, shape=pointwise_shape, pointwise=True,
       kind=_where_kind, simplify=simp.where, bool_inputs=True,
       text="where({condition}, {x}, {y})", latex=_where_latex,
       numpy="numpy.where({condition}, {x}, {y})", torch=_where_torch,
       math="({x} if {condition} else {y})", matrix=lambda m, node, *t: m.where(node, *t))
def where(condition: TensorLike, x: TensorLike, y: TensorLike) -> Result:
    """Elementwise choice: x where condition holds, else y. Use it instead of ``if``."""
    return apply("where", condition, x, y)


def _clamp_params(op, shapes, min=None, max=None):
    if min is None and max is None:
        raise ParameterError("clamp: give at least one of min and max")
    for bound in (min, max):
        if bound is not None and not isinstance(bound, (int, float)):
            raise ParameterError(f"clamp: bounds must be numbers, got {bound!r}; "
                            "use sg.maximum / sg.minimum for tensor bounds")
    return (("min", None if min is None else float(min)),
            ("max", None if max is None else float(max)))


def _clamp_expr(attrs, x):
    lo, hi = attrs["min"], attrs["max"]
    return Clamp(x, S.NegativeInfinity if lo is None else sympy.Float(lo),
                 S.Infinity if hi is None else sympy.Float(hi))


def _bound(param):
    """A clamp bound as code: None where it is absent (±oo)."""
    return "None" if param.expr.is_infinite else f"{param}"


def _clamp_text(x, min, max):
    parts = [f"{x}"] + [f"{k}={v}" for k, v in (("min", min), ("max", max))
                        if not v.expr.is_infinite]
    return f"clamp({', '.join(parts)})"


def _clamp_math(x, min, max):
    out = f"{x}"
    if not min.expr.is_infinite:
        out = f"max({out}, {min})"
    if not max.expr.is_infinite:
        out = f"min({out}, {max})"
    return out


@defop("clamp", ("x",), sympy=_clamp_expr, sympy_class=Clamp, sympy_params=("min", "max"),
       params=_clamp_params, shape=pointwise_shape, pointwise=True,
       simplify=simp.pointwise("clamp"), text=_clamp_text,
       latex=r"\operatorname{{clamp}}\left({x}, {min}, {max}\right)",
       numpy=lambda x, min, max: f"numpy.clip({x}, {_bound(min)}, {_bound(max)})",
       torch=lambda x, min, max: f"torch.clamp({x}, min={_bound(min)}, max={_bound(max)})",
       math=_clamp_math)
def clamp(x: TensorLike, min: TensorLike | None = None, max: TensorLike | None = None) -> Result:
    """x limited to [min, max] (either bound may be None); the gradient is 1 inside the
    bounds, ends included, as in torch."""
    return apply("clamp", x, min=min, max=max)


@defop("detach", ("x",), sympy=StopGradient, shape=pointwise_shape, pointwise=True, view=True,
       bounds=same_bounds,
       wrapper=True,
       kind=same_kind, simplify=simp.detach, differentiable=False, bool_inputs=True,
       text="detach({x})", latex=r"\operatorname{{sg}}\left({x}\right)",
       numpy="{x}", torch="{x:atom}.detach()", math="{x}",
       torch_names=("torch.detach", "torch.Tensor.detach"))
def detach(x: TensorLike) -> Result:
    """x as a constant for differentiation (``torch.Tensor.detach``,
    ``jax.lax.stop_gradient``)."""
    if isinstance(x, Tensor):
        return make("detach", (x,))
    torch = torch_module()
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach()
    return x


def stop_gradient(x: TensorLike) -> Result:
    """``jax.lax.stop_gradient``: the same as ``detach``."""
    return detach(x)


public(stop_gradient)
