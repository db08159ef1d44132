"""Rounding and the arithmetic built on it: floor, ceil, trunc, round (to ``decimals``),
signbit, fmod and remainder, nextafter, frexp's exponent, and rounding to a lower
precision (float16, bfloat16).

torch's conventions: the integer-valued functions carry no gradient (torch's is zero
everywhere); fmod and remainder pass the gradient to x and -grad·trunc(x/y) (or floor)
to y; nextafter passes it to x only; rounding to a lower precision rounds the forward
value and the incoming gradient alike (torch casts the gradient back to the input's
dtype through the cast). Derivatives: rules/rounding.yaml.
"""
from ...errors import ParameterError
from ..build import apply
from ..opdef import bool_kind
from .pointwise import _binary, _unary, elementwise
from .evaluated import evaluate_numbers
from .special_kernels import helpers


def _integral(name, latex, math_form, **kw):
    return _unary(name, None, text=f"{name}({{x}})", latex=latex, numpy=f"numpy.{name}({{x}})",
                  torch=f"torch.{name}({{x}})", math=math_form, **kw)


floor = _integral("floor", r"\left\lfloor {x} \right\rfloor", "float(math.floor({x}))")
ceil = _integral("ceil", r"\left\lceil {x} \right\rceil", "float(math.ceil({x}))")
trunc = _integral("trunc", r"\operatorname{{trunc}}\left({x}\right)",
                  "float(math.trunc({x}))", aliases=("fix",))


def _round_params(op, shapes, decimals=0):
    if isinstance(decimals, bool) or not isinstance(decimals, int):
        raise ParameterError(f"round: decimals must be an integer, got {decimals!r}")
    return (("decimals", decimals),)


def _scaled(x, decimals, fn):
    """torch's round to ``decimals``: x scaled by 10^decimals, rounded half to even,
    scaled back (dividing by 10^-decimals for negative decimals, as torch does)."""
    d = decimals.value
    if d == 0:
        return fn(f"{x}")
    if d > 0:
        return f"({fn(f'{x:mul} * {10.0 ** d!r}')} / {10.0 ** d!r})"
    return f"({fn(f'{x:mul} / {10.0 ** -d!r}')} * {10.0 ** -d!r})"


def _round_text(x, decimals):
    return f"round({x})" if decimals.value == 0 else f"round({x}, decimals={decimals})"


@elementwise("round", ("x",), None, params=_round_params, sympy_params=("decimals",),
             text=_round_text, latex=r"\operatorname{{round}}_{{{decimals}}}\left({x}\right)",
             numpy=lambda x, decimals: _scaled(x, decimals, lambda a: f"numpy.round({a})"),
             torch=lambda x, decimals: f"torch.round({x}, decimals={decimals})",
             math=lambda x, decimals: _scaled(x, decimals, lambda a: f"float(round({a}))"),
             matrix=lambda m, node, x: m.fn("round" if node.attrs["decimals"] == 0
                                            else f"round[{node.attrs['decimals']}]", x),
             torch_names=("torch.round", "torch.Tensor.round", "torch.special.round"))
def round(x, decimals=0):
    """x rounded to ``decimals`` decimal places, halves to even (torch.round)."""
    return apply("round", x, decimals=decimals)


@elementwise("signbit", ("x",), None, kind=bool_kind, differentiable=False, wrapper=True,
             text="signbit({x})", latex=r"\left[{x} \text{{ has its sign bit}}\right]",
             numpy="numpy.signbit({x})", torch="torch.signbit({x})",
             math="(math.copysign(1.0, {x}) < 0)",
             matrix=lambda m, node, x: m.fn("signbit", x),
             torch_names=("torch.signbit", "torch.Tensor.signbit"))
def signbit(x):
    """Whether x's sign bit is set (true for -0.0, unlike x < 0); a boolean Tensor."""
    return apply("signbit", x)


# x \bmod y binds below a product: (x \bmod y)^{2}, 2 x \left(x \bmod y\right)
fmod = _binary("fmod", None, text="fmod({x}, {y})", latex=r"{x:mul} \bmod_{{t}} {y:mul}",
               latex_precedence="Mod", numpy="numpy.fmod({x}, {y})",
               torch="torch.fmod({x}, {y})", math="math.fmod({x}, {y})")
remainder = _binary("remainder", None, text="remainder({x}, {y})",
                    latex=r"{x:mul} \bmod {y:mul}", latex_precedence="Mod",
                    numpy="numpy.remainder({x}, {y})",
                    torch="torch.remainder({x}, {y})", math="({x:mul} % {y:mul})")
nextafter = _binary("nextafter", None, text="nextafter({x}, {y})",
                    latex=r"\operatorname{{nextafter}}\left({x}, {y}\right)",
                    numpy="numpy.nextafter({x}, {y})", torch="torch.nextafter({x}, {y})",
                    math="math.nextafter({x}, {y})")


@elementwise("frexp_exponent", ("x",), None, differentiable=False,
             text="frexp_exponent({x})", latex=r"\operatorname{{exponent}}\left({x}\right)",
             numpy="numpy.frexp({x})[1].astype(numpy.float64)",
             torch="torch.frexp({x}).exponent.to(_dt)", math="float(math.frexp({x})[1])",
             matrix=lambda m, node, x: m.fn("exponent", x), torch_names=())
def frexp_exponent(x):
    """e with x = m·2^e and 0.5 <= |m| < 1 (0 for x = 0): frexp's exponent, as floats."""
    return apply("frexp_exponent", x)


PRECISIONS = ("float16", "bfloat16")

_HALF_MATH = ("def _sg_half(x):\n"
              "    import struct\n"
              "    single = struct.unpack('f', struct.pack('f', x))[0]\n"
              "    return struct.unpack('e', struct.pack('e', single))[0]")


def _precision_params(op, shapes, dtype):
    if dtype not in PRECISIONS:
        raise ParameterError(f"to_precision: dtype must be one of {PRECISIONS}, got {dtype!r}")
    return (("dtype", dtype),)


def _precision_numpy(x, dtype):
    if dtype.value == "float16":
        return f"numpy.asarray({x}).astype(numpy.float32).astype(numpy.float16)" \
               ".astype(numpy.float64)"
    return f"_sg_bfloat16({x})", helpers("_sg_bfloat16")


def _precision_math(x, dtype):
    if dtype.value == "float16":
        return f"_sg_half({x})", {"_sg_half": _HALF_MATH}
    return (f"float(_sg_bfloat16({x}))",
            {"_sg_numpy": "import numpy", **helpers("_sg_bfloat16")})


@elementwise("to_precision", ("x",), None, params=_precision_params, sympy_params=("dtype",),
             text="to_precision({x}, dtype={dtype})",
             latex=lambda x, dtype: rf"\operatorname{{{dtype.value}}}\left({x}\right)",
             numpy=_precision_numpy,
             torch=lambda x, dtype: f"{x:atom}.to(torch.{dtype.value}).to(_dt)",
             math=_precision_math, matrix=lambda m, node, x: m.fn(node.attrs["dtype"], x),
             fresh=True,
             torch_names=())
def to_precision(x, dtype):
    """x rounded to a lower floating precision ("float16" or "bfloat16", through float32
    as torch converts) and held as a float64 again: ``x.half()``, ``x.bfloat16()``."""
    return apply("to_precision", x, dtype=dtype)


evaluate_numbers("floor", "ceil", "trunc", "round", "signbit", "fmod", "remainder",
                 "nextafter", "frexp_exponent", "to_precision")
