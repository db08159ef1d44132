"""SymPy classes of the elementwise functions and selections SymPy lacks (``Sigmoid``,
``Where``, ``IsNan``, ...). They act on scalars, so closed forms of scalar functions stay
SymPy that ``sympy.diff`` and ``lambdify`` understand: each has ``fdiff`` or
``_eval_derivative`` and an ``elementary`` rewrite into SymPy's own functions. Their ops
(and spellings) are in ``pointwise``.
"""
import sympy
from sympy import Piecewise, S
from sympy.logic.boolalg import Boolean

from ..opdef import OpBase


class Sigmoid(OpBase):
    """The logistic function 1 / (1 + exp(-x))."""

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return S.Half

    def fdiff(self, argindex=1):
        return self * (1 - self)

    def elementary(self):
        return 1 / (1 + sympy.exp(-self.args[0]))

    def _eval_rewrite_as_exp(self, x, **kwargs):
        return 1 / (1 + sympy.exp(-x))

    def _eval_evalf(self, prec):
        if self.args[0].is_number:
            return self.elementary()._eval_evalf(prec)

    def _eval_is_real(self):
        return self.args[0].is_real


class Softplus(OpBase):
    """log(1 + exp(x)), computed stably by every backend."""

    @classmethod
    def eval(cls, x):
        if x.is_zero:
            return sympy.log(2)

    def fdiff(self, argindex=1):
        return Sigmoid(self.args[0])

    def elementary(self):
        return sympy.log(1 + sympy.exp(self.args[0]))

    def _eval_rewrite_as_log(self, x, **kwargs):
        return sympy.log(1 + sympy.exp(x))

    def _eval_evalf(self, prec):
        if self.args[0].is_number:
            return self.elementary()._eval_evalf(prec)

    def _eval_is_real(self):
        return self.args[0].is_real


class Relu(OpBase):
    """max(x, 0); its derivative at 0 is 0, as in torch."""

    @classmethod
    def eval(cls, x):
        if x.is_number and x.is_extended_real:
            return sympy.Max(x, 0)

    def fdiff(self, argindex=1):
        return Where(sympy.StrictGreaterThan(self.args[0], 0), S.One, S.Zero)

    def elementary(self):
        x = self.args[0]
        return Piecewise((x, x > 0), (0, True))

    def _eval_rewrite_as_Max(self, x, **kwargs):
        return sympy.Max(x, 0)

    def _eval_rewrite_as_Piecewise(self, x, **kwargs):
        return Piecewise((x, x > 0), (0, True))

    def _eval_is_real(self):
        return self.args[0].is_real


class ReluGrad(OpBase):
    """relu's gradient: g where x > 0, else 0 (a nan x passes g, as torch's
    threshold_backward)."""

    @classmethod
    def eval(cls, g, x):
        if g.is_zero:
            return S.Zero
        if x.is_number and x.is_extended_real:
            return S.Zero if x <= 0 else g

    def fdiff(self, argindex=1):
        if argindex == 1:
            return Where(sympy.StrictGreaterThan(self.args[1], 0), S.One, S.Zero)
        return S.Zero

    def elementary(self):
        g, x = self.args
        return Piecewise((0, x <= 0), (g, True))

    def _eval_evalf(self, prec):
        return self.elementary()._eval_evalf(prec)

    def _eval_is_real(self):
        return self.args[0].is_real


class Where(OpBase):
    """where(cond, a, b): a where cond holds, else b (elementwise)."""

    @classmethod
    def eval(cls, cond, a, b):
        if cond is S.true:
            return a
        if cond is S.false:
            return b
        if a == b:
            return a

    def _eval_derivative(self, s):
        return Where(self.args[0], self.args[1].diff(s), self.args[2].diff(s))

    def elementary(self):
        return self.rewrite(Piecewise)

    def _eval_rewrite_as_Piecewise(self, cond, a, b, **kwargs):
        return Piecewise((a, cond), (b, True))


class Clamp(OpBase):
    """clamp(x, lo, hi); lo = -oo or hi = oo when a bound is absent."""

    @classmethod
    def eval(cls, x, lo, hi):
        if x.is_number and lo.is_number and hi.is_number:
            return sympy.Min(sympy.Max(x, lo), hi)

    def _eval_derivative(self, s):
        x, lo, hi = self.args
        inside = sympy.And(sympy.GreaterThan(x, lo), sympy.LessThan(x, hi))
        return Where(inside, x.diff(s), S.Zero)

    def elementary(self):
        return self.rewrite(Piecewise)

    def _eval_rewrite_as_Piecewise(self, x, lo, hi, **kwargs):
        return Piecewise((lo, x < lo), (hi, x > hi), (x, True))


class AsFloat(OpBase):
    """1.0 where a boolean holds, else 0.0 (Iverson bracket): a real number, whatever
    its argument (SymPy cannot infer that from a Boolean)."""

    is_commutative = True
    is_extended_real = True
    is_real = True
    is_finite = True

    @classmethod
    def eval(cls, cond):
        if cond is S.true:
            return S.One
        if cond is S.false:
            return S.Zero

    def _eval_derivative(self, s):
        return S.Zero

    def elementary(self):
        return self.rewrite(Piecewise)

    def _eval_rewrite_as_Piecewise(self, cond, **kwargs):
        return Piecewise((1, cond), (0, True))


class IsNan(OpBase, Boolean):
    """x is nan: a test SymPy never evaluates to False for a symbol (unlike Ne(x, x))."""

    @classmethod
    def eval(cls, x):
        if x.is_number:
            return S.true if x is S.NaN else S.false

    def elementary(self):
        return sympy.Ne(self.args[0], self.args[0], evaluate=False)


class StopGradient(OpBase):
    """x, treated as a constant by differentiation (``detach``)."""

    def _eval_evalf(self, prec):
        return self.args[0]._eval_evalf(prec)

    def _eval_derivative(self, s):
        return S.Zero

    def elementary(self):
        return self.args[0]


class LogAddExp(OpBase):
    """log(exp(x) + exp(y)), computed stably by every backend."""

    @classmethod
    def eval(cls, x, y):
        if x == y and x.is_finite:
            return x + sympy.log(2)

    def fdiff(self, argindex=1):
        return sympy.exp(self.args[argindex - 1] - self)

    def elementary(self):
        x, y = self.args
        return sympy.log(sympy.exp(x) + sympy.exp(y))

    def _eval_evalf(self, prec):
        if all(a.is_number for a in self.args):
            return self.elementary()._eval_evalf(prec)

    def _eval_is_real(self):
        return all(a.is_real for a in self.args) or None


class Hypot(OpBase):
    """sqrt(x² + y²) without overflow in the squares."""

    def fdiff(self, argindex=1):
        return self.args[argindex - 1] / self

    def elementary(self):
        x, y = self.args
        return sympy.sqrt(x ** 2 + y ** 2)

    def _eval_evalf(self, prec):
        if all(a.is_number for a in self.args):
            return self.elementary()._eval_evalf(prec)

    def _eval_is_real(self):
        return all(a.is_real for a in self.args) or None


def to_elementary(expr):
    """``expr`` with symgrad's elementwise classes rewritten into plain SymPy (for
    ``sympy.diff`` and ``lambdify``)."""
    return expr.replace(lambda e: isinstance(e, OpBase) and hasattr(e, "elementary"),
                        lambda e: e.elementary())
