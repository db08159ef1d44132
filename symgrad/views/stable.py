"""Numerically stable forms where a formula spells one out by hand (issue 16, Build 9):
a scalar expression (an element of an elementwise formula, or a scalar formula) is
rewritten bottom-up by the rules of ``STABLE``, each an equality of SymPy expressions,

    log(1 + exp(u))                 softplus(u)
    exp(w)ʲ (1 + exp(w))⁻ᵏ          σ(w)ʲ (1 − σ(w))ᵏ⁻ʲ   (1/(1 + exp(−u)) is σ(u))
    log(𝟙ᵀ exp(x))                  logsumexp(x)
    (xᵀx)^(k/2)                     ‖x‖ᵏ

and a product c/(𝟙ᵀ exp(x)) exp(x) is c softmax(x). The new forms are the ops' own SymPy
forms (``OpDef.expr``) or their calls (``OpCall``), so they evaluate, print and compile
like any formula. A rule sees through named subterms (``defs``: t1 = exp(x) makes
t1/(t1 + 1) σ(x)).
"""
import sympy
from sympy.matrices.expressions import MatMul, MatrixExpr, OneMatrix, Trace, Transpose
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction

from ..core.opdef import OPS
from .algebra import mat
from .forms import OpCall, Ones


def _op(name, *operands):
    """The scalar SymPy form of the op ``name`` (its own class: sigmoid prints σ)."""
    return OPS[name].expr({}, list(operands))


def _softplus(e, see):
    """log(1 + exp(u)) -> softplus(u)."""
    if isinstance(e, sympy.log):
        w = _logistic_base(e.args[0], see)
        if w is not None:
            return _op("softplus", w)
    return None


def _sigmoid(e, see):
    """Products of exp(w) and (1 + exp(w))⁻ᵏ as σ: (1 + exp(w))⁻¹ is σ(−w), exp(w) σ(−w)
    is σ(w), so exp(w)/(exp(w) + 1) is σ(w) and exp(w)/(exp(w) + 1)² is σ(w) (1 − σ(w))
    (σ(−w) is written 1 − σ(w) beside σ(w))."""
    if not isinstance(e, (sympy.Mul, sympy.Pow)):
        return None
    sigmoid = OPS["sigmoid"].sympy_class
    powers, changed = {}, False      # {σ argument: power}
    rest = []
    for f in sympy.Mul.make_args(e):
        base, k = f.as_base_exp()
        w = _logistic_base(base, see)
        if w is not None and k.is_Integer and k < 0:
            powers[-w] = powers.get(-w, 0) - k
            changed = True
        elif isinstance(base, sigmoid) and k.is_Integer and k > 0:
            powers[base.args[0]] = powers.get(base.args[0], 0) + k
        else:
            rest.append(f)
    if not powers:
        return None
    kept = []
    for f in rest:                   # exp(w)ʲ σ(−w)ᵏ = σ(w)ʲ σ(−w)ᵏ⁻ʲ
        w = _exp_argument(f, see)
        j = 1
        if w is None and isinstance(f, sympy.Pow) and f.exp.is_Integer and f.exp > 0:
            w, j = _exp_argument(f.base, see), int(f.exp)
        if w is not None and powers.get(-w, 0) < j:      # exp(2w) is exp(w)²
            for v in powers:
                k = w / -v
                if k.is_Integer and 1 < k <= powers[v]:
                    w, j = -v, j * int(k)
                    break
        if w is not None and powers.get(-w, 0) >= j:
            powers[-w] -= j
            powers[w] = powers.get(w, 0) + j
            changed = True
        else:
            kept.append(f)
    if not changed:
        return None
    factors = []
    for v, k in powers.items():
        if not k:
            continue
        if v.could_extract_minus_sign() and powers.get(-v):
            factors.append((1 - _op("sigmoid", -v)) ** k)
        else:
            factors.append(_op("sigmoid", v) ** k)
    return sympy.Mul(*factors, *kept)


def _exp_argument(t, see):
    t = see(t)
    return t.args[0] if isinstance(t, sympy.exp) else None


def _logistic_base(b, see):
    """w for 1 + exp(w), else None."""
    b = see(b)
    if not isinstance(b, sympy.Add) or len(b.args) != 2 or sympy.S.One not in b.args:
        return None
    other = b.args[0] if b.args[1] == 1 else b.args[1]
    return _exp_argument(other, see)


def _logsumexp(e, see):
    """log(𝟙ᵀ exp(x)) -> logsumexp(x) of a vector x."""
    if not (isinstance(e, sympy.log) and isinstance(e.args[0], Trace)):
        return None
    inner = e.args[0].arg
    if not (isinstance(inner, MatMul) and len(inner.args) == 2):
        return None
    ones, ex = inner.args
    if isinstance(ones, OneMatrix) and ones.shape[0] == 1 and _is_exp(ex) \
            and ex.shape[1] == 1:
        return _call("logsumexp", ex.expr)
    return None


def _is_exp(e):
    return isinstance(e, ElementwiseApplyFunction) and isinstance(
        e.function.expr, sympy.exp) and e.function.expr.args == e.function.variables


def _norm_power(e, see):
    """(xᵀx)^(k/2) -> ‖x‖ᵏ of a vector x (k odd)."""
    if not (isinstance(e, sympy.Pow) and e.exp.is_Rational and e.exp.q == 2
            and isinstance(e.base, Trace)):
        return None
    inner = e.base.arg
    if isinstance(inner, MatMul) and len(inner.args) == 2 and isinstance(
            inner.args[0], Transpose) and inner.args[0].arg == inner.args[1] \
            and inner.args[1].shape[1] == 1:
        return _call("norm", inner.args[1], display="‖‖") ** (2 * e.exp)
    return None


def _sigmoid_slope(e, see):
    """c σ(w) − c σ(w)² -> c σ(w) (1 − σ(w)), the slope of σ as a person writes it."""
    if not isinstance(e, sympy.Add):
        return None
    sigmoid = OPS["sigmoid"].sympy_class
    terms = list(e.args)
    for k, t in enumerate(terms):
        c, rest = t.as_coeff_Mul()
        if not isinstance(rest, sigmoid):
            continue
        square = -c * rest ** 2
        if square in terms:
            others = [u for j, u in enumerate(terms) if j != k and u != square]
            return sympy.Add(c * rest * (1 - rest), *others)
    return None


STABLE = (_softplus, _sigmoid, _sigmoid_slope, _logsumexp, _norm_power)


def _call(op, column, display=""):
    """The op on a vector (a column), with its default parameters, as an OpCall."""
    shape = (column.shape[0],)
    opdef = OPS[op]
    attrs = dict(opdef.params([shape], {}))
    return OpCall.of(op, [column], attrs, [shape], tuple(opdef.shape([shape], attrs)),
                     display=display)


def stable(e, defs=None):
    """``e`` (a scalar expression) with the stable forms written in, innermost first;
    ``defs`` ({symbol: its definition}) lets a rule see through named subterms."""
    def see(t):
        return defs.get(t, t) if defs else t

    def step(t):
        for rule in STABLE:
            out = rule(t, see)
            if out is not None:
                return out
        return t
    return bottom_up(e, step)


def bottom_up(e, step):
    memo = {}

    def walk(t):
        if t in memo:
            return memo[t]
        if isinstance(t, (MatrixExpr, sympy.Lambda)) or not isinstance(t, sympy.Basic) \
                or not t.args or isinstance(t, OpCall):
            out = step(t) if isinstance(t, sympy.Expr) and not isinstance(t, MatrixExpr) \
                else t
        else:
            args = [walk(a) for a in t.args]
            new = t.func(*args) if any(a is not b for a, b in zip(args, t.args)) else t
            out = step(new)
        memo[t] = out
        return out
    return walk(e)


def softmax_product(e):
    """c/(𝟙ᵀ exp(x)) exp(x) is c softmax(x) (of a vector x)."""
    if not isinstance(e, MatMul):
        return e
    c, fs = e.as_coeff_matrices()
    if len(fs) != 1 or not _is_exp(fs[0]) or fs[0].shape[1] != 1:
        return e
    total = Trace(mat(Ones(1, fs[0].shape[0]), fs[0]))
    factors = list(sympy.Mul.make_args(c))
    if total ** -1 not in factors:
        return e
    factors.remove(total ** -1)
    return mat(sympy.Mul(*factors), _call("softmax", fs[0].expr, display="softmax"))
