"""torch's elementwise tails on symbolic Tensors: special functions beyond the ops' own
torch names (digamma, polygamma, mvlgamma, ndtr, ndtri, sinc, xlog1py, entr), rounding
arithmetic (frac, copysign, ``%``, ldexp, frexp, division with a rounding mode),
conversions to a lower precision (``half``, ``bfloat16``), and the functions that are the
identity (or a constant) on real tensors (``conj``, ``real``, ``angle``, ``positive``).

Complex results have no formula here: symgrad is real-valued, so ``cdouble``,
``view_as_complex``, ``complex``, ``polar`` are refused with what to do instead.
"""
import math

from ..core import ops as sgo
from ..core.build import const
from ..core.graph import Tensor
from ..errors import ParameterError
from .dispatch import dtype_name, refuse, reject, tensor_property, torch_op

_SQRT2 = math.sqrt(2.0)


# ----- gamma family ------------------------------------------------------------------------

@torch_op("torch.digamma", "special.digamma", "special.psi", "Tensor.digamma")
def digamma(input, *, out=None):
    reject("torch.digamma", out=out)
    return sgo.polygamma(input, 0)


@torch_op("torch.polygamma", "special.polygamma")
def polygamma(n, input, *, out=None):
    reject("torch.polygamma", out=out)
    return sgo.polygamma(input, _order(n))


@torch_op("Tensor.polygamma")
def polygamma_method(input, n):
    return sgo.polygamma(input, _order(n))


def _order(n):
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ParameterError(f"torch.polygamma: n must be an integer >= 0, got {n!r}")
    return n


@torch_op("torch.mvlgamma", "special.multigammaln", "Tensor.mvlgamma")
def mvlgamma(input, p, *, out=None):
    """log Γ_p(x) = p(p-1)/4 log π + Σ_{i<p} lgamma(x - i/2) (torch requires x > (p-1)/2,
    a condition on values that a trace cannot check)."""
    reject("torch.mvlgamma", out=out)
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise ParameterError(f"torch.mvlgamma: p must be an integer >= 1, got {p!r}")
    total = sgo.lgamma(input)
    for i in range(1, p):
        total = total + sgo.lgamma(input - i / 2)
    return total + p * (p - 1) / 4 * math.log(math.pi)


# ----- normal distribution and friends ------------------------------------------------------

@torch_op("special.ndtr")
def ndtr(input, *, out=None):
    reject("torch.special.ndtr", out=out)
    return 0.5 * sgo.erfc(-input / _SQRT2)


@torch_op("special.ndtri")
def ndtri(input, *, out=None):
    reject("torch.special.ndtri", out=out)
    return _SQRT2 * sgo.erfinv(2 * input - 1)


@torch_op("torch.sinc", "special.sinc", "Tensor.sinc")
def sinc(input, *, out=None):
    """sin(πx)/(πx), 1 at 0 (where its gradient is 0, as torch's)."""
    reject("torch.sinc", out=out)
    zero = sgo.eq(input, 0)
    px = math.pi * sgo.where(zero, 1.0, input)
    return sgo.where(zero, 1.0, sgo.sin(px) / px)


@torch_op("special.xlog1py")
def xlog1py(input, other, *, out=None):
    """x log1p(y), 0 where x == 0 (also when y == -1), as torch defines it."""
    reject("torch.special.xlog1py", out=out)
    return sgo.xlog1py(input, other)


@torch_op("special.entr")
def entr(input, *, out=None):
    """-x log x for x > 0, 0 at 0, -inf below, nan at nan (torch's values; below 0 the
    gradient is 0 where torch's formula gives nan, and at 0 torch's is inf)."""
    reject("torch.special.entr", out=out)
    inner = sgo.logical_not(sgo.le(input, 0))     # x > 0 or nan: -x log x, nan at nan
    value = -input * sgo.log(sgo.where(inner, input, 1.0))
    return sgo.where(inner, value, sgo.where(sgo.eq(input, 0), 0.0, -math.inf))


# ----- rounding arithmetic --------------------------------------------------------------------

@torch_op("torch.frac", "Tensor.frac")
def frac(input, *, out=None):
    reject("torch.frac", out=out)
    return input - sgo.trunc(input)


def divide_rounded(input, other, rounding_mode):
    """torch.div with rounding_mode "trunc" or "floor": no gradient (torch's is zero)."""
    if rounding_mode == "trunc":
        return sgo.trunc(input / other)
    if rounding_mode == "floor":
        return sgo.floor(input / other)
    raise ParameterError(f"torch.div: rounding_mode must be None, 'trunc' or 'floor', "
                         f"got {rounding_mode!r}")


@torch_op("Tensor.__rmod__")
def rmod(input, other):
    return sgo.remainder(other, input)


@torch_op("torch.copysign", "Tensor.copysign")
def copysign(input, other, *, out=None):
    """|x| with the sign (bit) of y; gradient 0 at x = 0, as torch's."""
    reject("torch.copysign", out=out)
    magnitude = sgo.abs(input)
    if isinstance(other, (int, float)):
        return -magnitude if math.copysign(1.0, other) < 0 else magnitude
    return sgo.where(sgo.signbit(other), -magnitude, magnitude)


@torch_op("torch.ldexp", "Tensor.ldexp")
def ldexp(input, other, *, out=None):
    reject("torch.ldexp", out=out)
    return input * sgo.pow(2.0, other)


@torch_op("torch.frexp", "Tensor.frexp")
def frexp(input, *, out=None):
    """(mantissa, exponent): x = mantissa·2^exponent, 0.5 <= |mantissa| < 1; the exponent
    is a float Tensor holding integers (torch's is int32) and carries no gradient."""
    reject("torch.frexp", out=out)
    exponent = sgo.frexp_exponent(input)
    return input / sgo.pow(2.0, exponent), exponent


@torch_op("torch.deg2rad", "Tensor.deg2rad")
def deg2rad(input, *, out=None):
    reject("torch.deg2rad", out=out)
    return input * (math.pi / 180)


@torch_op("torch.rad2deg", "Tensor.rad2deg")
def rad2deg(input, *, out=None):
    reject("torch.rad2deg", out=out)
    return input * (180 / math.pi)


@torch_op("torch.logaddexp2", "Tensor.logaddexp2")
def logaddexp2(input, other, *, out=None):
    reject("torch.logaddexp2", out=out)
    ln2 = math.log(2.0)
    return sgo.logaddexp(input * ln2, other * ln2) / ln2


@torch_op("torch.nan_to_num", "Tensor.nan_to_num")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """nan, inf and -inf replaced (inf by the largest float64 unless given); torch's
    gradient is 1 where x is finite, 0 elsewhere."""
    reject("torch.nan_to_num", out=out)
    big = 1.7976931348623157e308
    out = sgo.where(sgo.eq(input, math.inf), big if posinf is None else posinf, input)
    out = sgo.where(sgo.eq(input, -math.inf), -big if neginf is None else neginf, out)
    return sgo.where(sgo.isnan(input), nan if nan is not None else 0.0, out)


@torch_op("F.threshold")
def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value (the gradient too is 0 there, as torch's)."""
    return sgo.where(sgo.gt(input, threshold), input, value)


@torch_op("torch.fill")
def fill(input, value):
    """A Tensor of x's shape filled with value (a number or a 0-d Tensor)."""
    if isinstance(value, Tensor):
        return sgo.broadcast_to(value, input.shape)
    return const(float(value), input.shape)


refuse("it writes into its argument in place, which a traced formula cannot do; use the "
       "out-of-place torch.zeros_like(x), torch.fill(x, value) or torch.full_like(x, value)",
       "torch.zero_", "Tensor.zero_", "torch.fill_", "Tensor.fill_")


# ----- the identity (or a constant) on real tensors ---------------------------------------------

def _real_identity(input, *args, **kwargs):
    return input


torch_op("torch.positive", "Tensor.positive", "torch.conj", "Tensor.conj",
         "torch.conj_physical", "Tensor.conj_physical", "torch.resolve_conj",
         "Tensor.resolve_conj", "torch.resolve_neg", "Tensor.resolve_neg",
         "torch.real")(_real_identity)
tensor_property("real")(_real_identity)


@torch_op("torch.angle", "Tensor.angle")
def angle(input, *, out=None):
    """The angle of a real number: pi below 0, else 0 (nan at nan); no gradient."""
    reject("torch.angle", out=out)
    return sgo.where(sgo.isnan(input), math.nan,
                     sgo.where(sgo.lt(input, 0), math.pi, 0.0))


# ----- lower precision -------------------------------------------------------------------------

_LOWER = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16"}


def to_dtype(input, dtype):
    """x converted to a floating dtype: float16 and bfloat16 round it (forward and
    gradient, as torch); float32 and float64 keep the value."""
    lower = _LOWER.get(dtype_name(dtype)) if dtype is not None else None
    if lower is None or not isinstance(input, Tensor):
        return input
    return sgo.to_precision(input, lower)


@torch_op("Tensor.half")
def half(input, memory_format=None):
    return to_dtype(input, "float16")


@torch_op("Tensor.bfloat16")
def bfloat16(input, memory_format=None):
    return to_dtype(input, "bfloat16")


_COMPLEX = ("symgrad traces real-valued functions and has no complex tensors; keep the "
            "real and imaginary parts as two real tensors (or a trailing dimension of 2) "
            "and write the complex arithmetic on them")
refuse(_COMPLEX, "Tensor.cdouble", "Tensor.cfloat", "Tensor.chalf", "torch.view_as_complex",
       "torch.complex", "torch.polar", "Tensor.imag", "torch.imag")
