"""NumPy kernels of the special functions NumPy lacks (log-gamma, polygamma, erfinv, erfc,
erfcx, log_ndtr, the modified Bessel functions I0 and I1, bfloat16 rounding).

SciPy is not a dependency, so these are written here once, vectorised: their loops run
over series terms or recurrence steps, never over elements (erf and erfc, whose rational
approximations are long, are ``math``'s, as ``sg.erf`` already does). Generated code does
not import symgrad: ``source(name)`` is the text of a kernel and of the kernels it calls,
emitted as a helper before the generated function.
"""
import math

import numpy
from ..sources import function_source

# Bernoulli numbers B_2, B_4, ..., B_16 (the asymptotic series of log-gamma and polygamma)
_SG_B2K = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)


def _sg_shift(z, top, term):
    """(z moved up to >= top by unit steps, the sum of term(z) over the steps taken).
    Below -1e5 (and at -inf) the steps would be too many: nan there."""
    acc = numpy.where(z < -1e5, numpy.nan, 0.0)
    z = numpy.where(z < -1e5, numpy.nan, z)
    while True:
        low = z < top
        if not low.any():
            return z, acc
        acc = acc + numpy.where(low, term(numpy.where(low, z, 1.0)), 0.0)
        z = numpy.where(low, z + 1.0, z)


def _sg_lgamma(x):
    """log|Γ(x)|: Stirling's series past 15, the recurrence below it, the reflection
    formula below 1/2; inf at the poles (0, -1, -2, ...), as torch.lgamma."""
    x = numpy.asarray(x, dtype=float)
    with numpy.errstate(all="ignore"):
        reflect = x < 0.5
        z0 = numpy.where(reflect, 1.0 - x, x)
        z, logs = _sg_shift(z0, 15.0, numpy.log)
        series = sum(b / (2 * k * (2 * k - 1) * z ** (2 * k - 1))
                     for k, b in enumerate(_SG_B2K, 1))
        big = (z - 0.5) * numpy.log(z) - z + 0.5 * math.log(2 * math.pi) + series
        big = numpy.where(z == numpy.inf, numpy.inf, big)
        value = big - logs
        r = x - numpy.round(x)
        reflected = math.log(math.pi) - numpy.log(numpy.abs(numpy.sin(math.pi * r))) - value
        out = numpy.where(reflect, reflected, value)
        return numpy.where(x == -numpy.inf, numpy.inf, out)


def _sg_polygamma(n, x):
    """ψ⁽ⁿ⁾(x), the n-th derivative of the digamma function (n = 0: digamma): the
    asymptotic series past 15 + 2n, the recurrence below it; digamma reflects below 1/2.
    As torch: digamma(0) = -inf, nan at the negative integers."""
    x = numpy.asarray(x, dtype=float)
    n = int(n)
    with numpy.errstate(all="ignore"):
        if n == 0:
            reflect = x < 0.5
            z0 = numpy.where(reflect, 1.0 - x, x)
            z, acc = _sg_shift(z0, 15.0, lambda z: -1.0 / z)
            series = sum(b / (2 * k * z ** (2 * k)) for k, b in enumerate(_SG_B2K, 1))
            value = numpy.log(z) - 0.5 / z - series + acc
            value = numpy.where(z == numpy.inf, numpy.inf, value)
            r = x - numpy.round(x)
            reflected = value - math.pi / numpy.tan(math.pi * r)
            out = numpy.where(reflect, reflected, value)
            out = numpy.where(x == 0, -numpy.inf, out)
            return numpy.where((x < 0) & (r == 0), numpy.nan, out)
        fact = math.factorial(n)
        sign = -1.0 if n % 2 else 1.0
        z, acc = _sg_shift(x, 15.0 + 2 * n, lambda z: -sign * fact / z ** (n + 1))
        total = math.factorial(n - 1) / z ** n + fact / (2 * z ** (n + 1))
        for k, b in enumerate(_SG_B2K, 1):
            total = total + b * math.factorial(2 * k + n - 1) / (
                math.factorial(2 * k) * z ** (2 * k + n))
        return -sign * total + acc


def _sg_erf(x):
    return numpy.vectorize(math.erf, otypes=[float])(x)


def _sg_erfc(x):
    return numpy.vectorize(math.erfc, otypes=[float])(x)


def _sg_erfinv(x):
    """The inverse of erf: Giles' single-precision approximation, then Newton steps on
    erf; ±inf at ±1, nan outside [-1, 1]."""
    x = numpy.asarray(x, dtype=float)
    with numpy.errstate(all="ignore"):
        w = -numpy.log((1.0 - x) * (1.0 + x))
        a = w - 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
            p = c + p * a
        b = numpy.sqrt(w) - 3.0
        q = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
            q = c + q * b
        y = numpy.where(w < 5.0, p, q) * x
        finite = numpy.isfinite(y)
        for _ in range(3):
            step = (_sg_erf(numpy.where(finite, y, 0.0)) - x) / (
                2 / math.sqrt(math.pi) * numpy.exp(-y * y))
            y = numpy.where(finite, y - step, y)
        return numpy.where(numpy.abs(x) == 1.0, numpy.copysign(numpy.inf, x), y)


def _sg_erfcx(x):
    """exp(x²) erfc(x): directly below 5, a continued fraction above (no underflow)."""
    x = numpy.asarray(x, dtype=float)
    with numpy.errstate(all="ignore"):
        small = ~(x >= 5.0)
        direct = numpy.exp(x * x) * _sg_erfc(numpy.where(small, x, 0.0))
        direct = numpy.where(x == -numpy.inf, numpy.inf, direct)
        xb = numpy.where(small, 5.0, x)
        t = xb
        for k in range(60, 0, -1):
            t = xb + (k / 2) / t
        return numpy.where(small, direct, 1.0 / (math.sqrt(math.pi) * t))


def _sg_log_ndtr(x):
    """log Φ(x), the log of the normal CDF, without underflow in the left tail."""
    x = numpy.asarray(x, dtype=float)
    with numpy.errstate(all="ignore"):
        t = x / math.sqrt(2)
        left = numpy.log(_sg_erfcx(-numpy.minimum(t, 0.0)) / 2) - t * t
        right = numpy.log1p(-_sg_erfc(numpy.maximum(t, -1.0)) / 2)
        return numpy.where(x < -1.0, left, right)


def _sg_bessel_i(nu, x, scaled):
    """I_nu(x) (nu = 0 or 1), times exp(-|x|) when scaled: the power series up to 30,
    Hankel's asymptotic series beyond."""
    x = numpy.asarray(x, dtype=float)
    ax = numpy.abs(x)
    with numpy.errstate(all="ignore"):
        big = ax > 30.0
        xs = numpy.where(big, 0.0, ax)
        t = (xs / 2) ** 2
        term = (xs / 2) ** nu
        s = term
        for k in range(1, 400):
            term = term * t / (k * (k + nu))
            s = s + term
            if not (term > 1e-17 * s).any():
                break
        if scaled:
            s = s * numpy.exp(-xs)
        xb = numpy.where(big, ax, 1.0)
        a = numpy.ones_like(xb)
        total = a
        for k in range(1, 30):
            a = -a * (4 * nu * nu - (2 * k - 1) ** 2) / (k * 8 * xb)
            total = total + a
        asymptotic = total / numpy.sqrt(2 * math.pi * xb)
        if not scaled:
            asymptotic = asymptotic * numpy.exp(xb)
        out = numpy.where(big, asymptotic, s)
        return numpy.where(x < 0, -out, out) if nu == 1 else out


def _sg_bfloat16(x):
    """x rounded to bfloat16 as torch does (through float32, then to the top 16 bits,
    to nearest with ties to even), as float64."""
    f = numpy.array(x, dtype=numpy.float32, ndmin=1)
    with numpy.errstate(all="ignore"):
        bits = f.view(numpy.uint32)
        rounded = (bits + numpy.uint32(0x7FFF) + ((bits >> numpy.uint32(16)) & numpy.uint32(1))
                   ) & numpy.uint32(0xFFFF0000)
        out = numpy.where(numpy.isnan(f), f, rounded.view(numpy.float32))
    return out.astype(numpy.float64).reshape(numpy.shape(x))


_CALLS = {"_sg_lgamma": ("_sg_shift",), "_sg_polygamma": ("_sg_shift",),
          "_sg_erfinv": ("_sg_erf",), "_sg_erfcx": ("_sg_erfc",),
          "_sg_log_ndtr": ("_sg_erfcx", "_sg_erfc")}


def helpers(name):
    """{helper name: source} of the kernel ``name`` and of the kernels it calls (the
    ``helpers`` of a Spelling)."""
    out = {}
    for dep in _CALLS.get(name, ()):
        out.update(helpers(dep))
    fn = globals()[name]
    source = function_source(fn)
    if name in ("_sg_lgamma", "_sg_polygamma"):
        source = f"_SG_B2K = {_SG_B2K!r}\n\n\n" + source
    out[name] = source
    return out
