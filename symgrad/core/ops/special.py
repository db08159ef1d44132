"""Special functions: the inverse hyperbolic functions, log-gamma and the polygamma
functions, erfc, erfcx, erfinv, log Φ (``log_ndtr``) and the modified Bessel functions
I0 and I1 (plain and exponentially scaled).

The inverse hyperbolics are SymPy's own functions, which every printer knows. The
others are ops whose forms are their own SymPy classes: NumPy code calls the
vectorised kernels of ``special_kernels`` (emitted as helpers), torch code calls
``torch.special``. Derivatives (torch's formulas): rules/special.yaml.
"""
import sympy

from ...errors import ParameterError
from ..build import apply
from .functions import IsNan, Where
from .pointwise import _log1p_expr, _log_expr, _unary, elementwise
from .evaluated import evaluate_numbers
from .special_kernels import helpers

_NUMPY_IMPORT = {"_sg_numpy": "import numpy"}


def _kernel(name, call):
    """(numpy spelling, math spelling) of a kernel ``call`` (a template naming it)."""
    source = helpers(name)
    return (call, source), (f"float({call})", {**_NUMPY_IMPORT, **source})


def _special(name, text, latex, kernel, torch, torch_names, math=None, jax=None):
    numpy_form, math_form = _kernel(kernel, f"{kernel}({{x}})")
    return _unary(name, None, text=text, latex=latex, numpy=numpy_form, torch=torch,
                  math=math or math_form, torch_names=torch_names,
                  jax=f"jax.scipy.special.{jax or name}({{x}})")


def _names(*names):
    return tuple(f"torch.{n}" for n in names)


acosh = _unary("acosh", lambda attrs, x: sympy.acosh(x), aliases=("arccosh",))
asinh = _unary("asinh", lambda attrs, x: sympy.asinh(x), aliases=("arcsinh",))
atanh = _unary("atanh", lambda attrs, x: sympy.atanh(x), aliases=("arctanh",))

lgamma = _special("lgamma", "lgamma({x})", r"\ln\left|\Gamma\left({x}\right)\right|",
                  "_sg_lgamma", "torch.lgamma({x})",
                  _names("lgamma", "Tensor.lgamma", "special.gammaln"),
                  math="math.lgamma({x})", jax="gammaln")
erfinv = _special("erfinv", "erfinv({x})", r"\operatorname{{erf}}^{{-1}}\left({x}\right)",
                  "_sg_erfinv", "torch.erfinv({x})",
                  _names("erfinv", "Tensor.erfinv", "special.erfinv"))
erfc = _special("erfc", "erfc({x})", r"\operatorname{{erfc}}\left({x}\right)", "_sg_erfc",
                "torch.erfc({x})", _names("erfc", "Tensor.erfc", "special.erfc"),
                math="math.erfc({x})")
erfcx = _special("erfcx", "erfcx({x})", r"e^{{{x:pow}^{{2}}}}\operatorname{{erfc}}\left({x}\right)",
                 "_sg_erfcx", "torch.special.erfcx({x})", _names("special.erfcx"))
log_ndtr = _special("log_ndtr", "log_ndtr({x})", r"\log\Phi\left({x}\right)", "_sg_log_ndtr",
                    "torch.special.log_ndtr({x})", _names("special.log_ndtr"))


def _bessel(name, nu, scaled, torch_names):
    numpy_form, math_form = _kernel("_sg_bessel_i", f"_sg_bessel_i({nu}, {{x}}, {scaled})")
    latex = (rf"e^{{{{-\left|{{x}}\right|}}}} I_{nu}\left({{x}}\right)" if scaled
             else rf"I_{nu}\left({{x}}\right)")
    return _unary(name, None, text=f"{name}({{x}})", latex=latex, numpy=numpy_form,
                  torch=f"torch.special.{name}({{x}})", math=math_form,
                  jax=f"jax.scipy.special.{name}({{x}})",
                  torch_names=torch_names)


i0 = _bessel("i0", 0, False, _names("i0", "Tensor.i0", "special.i0"))
i0e = _bessel("i0e", 0, True, _names("special.i0e"))
i1 = _bessel("i1", 1, False, _names("special.i1"))
i1e = _bessel("i1e", 1, True, _names("special.i1e"))


def _polygamma_params(op, shapes, n=0):
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ParameterError(f"polygamma: the order n must be an integer >= 0, got {n!r}")
    return (("n", n),)


def _polygamma_text(x, n):
    return f"polygamma({x}, n={n})"


def _polygamma_latex(x, n):
    return (rf"\psi\left({x}\right)" if n.value == 0
            else rf"\psi^{{({n})}}\left({x}\right)")


_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _psi_name(n):
    return "ψ" if n == 0 else f"ψ⁽{str(n).translate(_SUPERSCRIPTS)}⁾"


_POLYGAMMA_NUMPY = helpers("_sg_polygamma")


@elementwise("polygamma", ("x",), None, params=_polygamma_params, sympy_params=("n",),
             text=_polygamma_text, latex=_polygamma_latex,
             numpy=(lambda x, n: f"_sg_polygamma({n}, {x})", _POLYGAMMA_NUMPY),
             torch=lambda x, n: f"torch.polygamma({n}, {x})",
             jax=lambda x, n: f"jax.scipy.special.polygamma({n}, {x})",
             math=(lambda x, n: f"float(_sg_polygamma({n}, {x}))",
                   {**_NUMPY_IMPORT, **_POLYGAMMA_NUMPY}),
             matrix=lambda m, node, x: m.fn(_psi_name(node.attrs["n"]), x),
             torch_names=())
def polygamma(x, n=0):
    """ψ⁽ⁿ⁾(x), the n-th derivative of the digamma function ψ = Γ'/Γ (n = 0: digamma).
    Text formulas spell it as this call, so they read back as written."""
    return apply("polygamma", x, n=n)


# ----- x log y -----------------------------------------------------------------------------

def _x_times(log_form):
    """x * log_form(y), 0 where x == 0 and y is a number (torch's xlogy and xlog1py: nan
    where y is). A composite SymPy form, so every printer already knows it."""
    def form(attrs, x, y):
        zero = sympy.And(sympy.Eq(x, 0), sympy.Not(IsNan(y)))
        return Where(zero, sympy.S.Zero, x * log_form(attrs, y))
    return form


@elementwise("xlogy", ("x", "y"), _x_times(_log_expr), torch_names=())
def xlogy(x, y):
    """x log y, 0 where x == 0 unless y is nan (``torch.xlogy``); its gradient is
    torch's: log y for x, also at x == 0 (0 there only where y <= 0)."""
    return apply("xlogy", x, y)


@elementwise("xlog1py", ("x", "y"), _x_times(_log1p_expr), torch_names=())
def xlog1py(x, y):
    """x log(1 + y), 0 where x == 0 unless y is nan (``torch.special.xlog1py``); its
    gradient is torch's, as xlogy's (0 for x only where x == 0 and y <= -1)."""
    return apply("xlog1py", x, y)


evaluate_numbers("lgamma", "erfinv", "erfc", "erfcx", "log_ndtr", "i0", "i0e", "i1", "i1e",
                 "polygamma")
