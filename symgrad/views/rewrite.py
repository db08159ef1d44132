"""Print forms: a formula rewritten into the form a person writes, and into the numerically
stable form where a formula spells one out by hand (issue 16, Build 4 and 9). Every view
prints the result: ``g.formulas`` holds it, matrix notation and LaTeX print it.

``tidy(expr)`` walks a formula once (memoised, so a formula that shares subterms costs its
number of distinct subterms) and

- reads each maximal elementwise region (sums, Hadamard products and powers, elementwise
  functions, scalar multiples and 𝟙 of one shape) as a scalar expression over the region's
  operands (its *leaves*: inputs, matrix products, calls), lets SymPy cancel it, and keeps
  the result when it prints shorter: (((y − 𝟙) ⊘ (𝟙 − σ(u)) − y ⊘ σ(u)) ∘ σ(u) ∘ (𝟙 − σ(u))
  is σ(u) − y;
- writes the stable forms of ``STABLE``: log(1 + exp(u)) as softplus(u), exp(u)/(exp(u) + 1)
  and 1/(1 + exp(−u)) as σ(u), log(𝟙ᵀ exp(x)) as logsumexp(x), (xᵀx)^(k/2) as ‖x‖ᵏ;
- drops a zero guard that cannot matter: {0 if ‖x‖ = 0; c} x is c x when c is finite at
  ‖x‖ = 0 (x is 0 there), and a guard repeated inside its own other branch;
- writes float exponents that are halves as rationals (x^0.5 is √x) and float
  coefficients that are integers as integers (1.0 A is A).

Everything here is SymPy algebra on SymPy objects: a rewrite is an equality, and the tests
evaluate the rewritten formulas against the compiled gradient.
"""
import sympy
from sympy import Piecewise
from sympy.matrices.expressions import (
    HadamardProduct, Inverse, MatAdd, MatMul, MatrixExpr, OneMatrix, Trace, Transpose,
    ZeroMatrix)
from sympy.matrices.expressions.applyfunc import ElementwiseApplyFunction
from sympy.matrices.expressions.diagonal import DiagMatrix
from sympy.matrices.expressions.hadamard import HadamardPower

from ..core.opdef import OPS
from .algebra import add, diag, elementwise, hadamard, mat, transpose
from .forms import HadamardPow, OpCall, Ones

MAX_REGION = 60     # operations: a larger elementwise region is left as it is


# ----- stable forms ---------------------------------------------------------------------

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


STABLE = (_softplus, _sigmoid, _logsumexp, _norm_power)


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
    return _bottom_up(e, step)


def _bottom_up(e, step):
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


# ----- scalars --------------------------------------------------------------------------

def _exact_numbers(e):
    """Float exponents that are halves as rationals, integral float factors as integers."""
    def step(t):
        if isinstance(t, sympy.Pow) and isinstance(t.exp, sympy.Float) and \
                float(t.exp * 2).is_integer():
            return t.base ** sympy.Rational(int(t.exp * 2), 2)
        return t
    e = _bottom_up(e, step)
    floats = {f: sympy.Integer(int(f)) for f in e.atoms(sympy.Float) if float(f).is_integer()}
    return e.xreplace(floats) if floats else e


def _unguarded(e):
    """A zero guard repeated inside its own other branch drops out there:
    {0 if c; 2 {1 if c; 1/r} r} is {0 if c; 2}."""
    def step(t):
        if not isinstance(t, Piecewise) or len(t.args) != 2 or t.args[1].cond != sympy.true:
            return t
        (a, c), (b, _) = t.args
        inner = b.replace(lambda p: isinstance(p, Piecewise) and p.args[0].cond == c,
                          lambda p: _rest(p))
        return Piecewise((a, c), (inner, True)) if inner != b else t
    return _bottom_up(e, step)


def _rest(p):
    rest = p.args[1:]
    if len(rest) == 1 and rest[0].cond == sympy.true:
        return rest[0].expr
    return Piecewise(*[(q.expr, q.cond) for q in rest])


def tidy_scalar(e, inner=None, defs=None):
    """A scalar formula in its print form (``inner`` tidies the matrices inside; ``defs``:
    the definitions of the named subterms in it)."""
    if isinstance(e, sympy.Float) and float(e).is_integer():
        return sympy.Integer(int(e))
    if not isinstance(e, sympy.Basic) or not e.args:
        return e
    if inner is not None:
        e = _map_matrices(e, inner)
    e = _exact_numbers(e)
    e = _unguarded(e)
    return stable(e, defs)


def _map_matrices(e, fn):
    """``e`` with ``fn`` applied to the outermost matrix expressions inside it."""
    if isinstance(e, MatrixExpr):
        return fn(e)
    if not isinstance(e, sympy.Basic) or not e.args or isinstance(e, sympy.Lambda):
        return e
    if isinstance(e, OpCall):
        return _with_operands(e, [fn(o) if isinstance(o, MatrixExpr) else _map_matrices(o, fn)
                                  for o in e.operands])
    args = [_map_matrices(a, fn) for a in e.args]
    return e.func(*args) if any(a is not b for a, b in zip(args, e.args)) else e


def _with_operands(call, operands):
    if all(a is b for a, b in zip(operands, call.operands)):
        return call
    return call.func(call.args[0], sympy.Tuple(*operands), *call.args[2:])


# ----- matrices -------------------------------------------------------------------------

def tidy(expr):
    """``expr`` (a formula: a matrix expression or a scalar) in its print form."""
    return _Tidy().walk(expr)


class _Tidy:
    def __init__(self):
        self.memo = {}

    def walk(self, e):
        if not isinstance(e, sympy.Basic):
            return e
        out = self.memo.get(e)
        if out is None:
            out = self._walk(e)
            self.memo[e] = out
        return out

    def _walk(self, e):
        if not isinstance(e, MatrixExpr):
            return tidy_scalar(e, self.walk) if isinstance(e, sympy.Expr) else e
        if _elementwise(e):
            return self.region(e)
        if isinstance(e, OpCall):
            return _with_operands(e, [self.walk(o) for o in e.operands])
        if not e.args or isinstance(e, (sympy.MatrixBase, ElementwiseApplyFunction)):
            return e
        args = [self.walk(a) for a in e.args]
        if isinstance(e, MatMul):
            return _product(mat(*args))
        if isinstance(e, DiagMatrix):
            return diag(args[0])
        if all(a is b for a, b in zip(args, e.args)):
            return e
        if isinstance(e, Transpose):
            return transpose(args[0])
        return e.func(*args)

    def region(self, e):
        """An elementwise region: as written (its leaves tidied) or as SymPy cancels its
        scalar reading, whichever prints shorter."""
        r = _Region(e.shape, self.walk)
        s = r.scalar(e)
        asis = r.rebuild(e)
        if r.size > MAX_REGION:
            return asis
        s = _exact_numbers(s)
        rewritten = stable(_unguarded(s))
        # (candidate, the share of the length as written it must stay under): SymPy's own
        # reading folds constants but also distributes them, so it must save a quarter
        candidates = [(rewritten, 1.0 if rewritten != s else 0.75)]
        if any(p.exp.is_negative for p in s.atoms(sympy.Pow)):    # divisions to cancel
            try:
                cancelled = sympy.cancel(s)
                candidates += [(stable(cancelled), 1.0), (stable(sympy.factor(cancelled)), 1.0)]
            except (sympy.PolynomialError, TypeError, ValueError):
                pass
        best, length = asis, _length(asis)
        for c, share in candidates:
            m = r.matrix(c)
            if m is not None and _length(m) < share * length:
                best, length = m, _length(m)
        return _product(best)


def _length(e):
    from .matrix_print import matrix_text
    return len(matrix_text(e))


def _elementwise(e):
    """Whether ``e`` is an elementwise combination of operands of its shape."""
    if isinstance(e, (MatAdd, HadamardProduct, HadamardPower)):
        return True
    if isinstance(e, ElementwiseApplyFunction):
        return e.expr.shape == e.shape
    if isinstance(e, MatMul):
        c, fs = e.as_coeff_matrices()
        return len(fs) == 1 and fs[0].shape == e.shape and _elementwise(fs[0])
    return False


class _Region:
    """An elementwise region read as a scalar expression: each leaf (a matrix operand, or a
    scalar holding matrices, such as 𝟙ᵀx) stands as a real Dummy."""

    def __init__(self, shape, walk):
        self.shape, self.walk = shape, walk
        self.leaves, self.back, self.matrices = {}, {}, set()
        self.memo, self.rebuilt = {}, {}
        self.size = 0

    def leaf(self, t):
        d = self.leaves.get(t)
        if d is None:
            d = sympy.Dummy(f"u{len(self.leaves)}", real=True)
            self.leaves[t] = d
            self.back[d] = self.walk(t)
            if isinstance(t, MatrixExpr):
                self.matrices.add(d)
        return d

    def scalar(self, e):
        """The region ``e`` (a matrix of the region's shape) as a scalar expression."""
        out = self.memo.get(e)
        if out is None:
            self.size += 1
            out = self.memo[e] = self._scalar(e)
        return out

    def _scalar(self, e):
        if isinstance(e, ZeroMatrix):
            return sympy.S.Zero
        if isinstance(e, OneMatrix) and e.shape == self.shape:
            return sympy.S.One
        if isinstance(e, MatAdd):
            return sympy.Add(*[self.scalar(a) for a in e.args])
        if isinstance(e, HadamardProduct):
            return sympy.Mul(*[self.scalar(a) for a in e.args])
        if isinstance(e, HadamardPower):
            return sympy.Pow(self.scalar(e.base), self.coefficient(e.exp))
        if isinstance(e, ElementwiseApplyFunction) and e.expr.shape == e.shape:
            (d,), body = e.function.variables, e.function.expr
            return self.coefficient(body).xreplace({d: self.scalar(e.expr)})
        if isinstance(e, MatMul):
            c, fs = e.as_coeff_matrices()
            if len(fs) == 1 and fs[0].shape == e.shape:
                return self.coefficient(c) * self.scalar(fs[0])
        return self.leaf(e)

    def rebuild(self, e):
        """The region as written, with its leaves tidied."""
        out = self.rebuilt.get(e)
        if out is not None:
            return out
        if e in self.leaves:
            out = self.back[self.leaves[e]]
        elif isinstance(e, MatAdd):
            out = add(*[self.rebuild(a) for a in e.args])
        elif isinstance(e, HadamardProduct):
            out = self.rebuild(e.args[0])
            for a in e.args[1:]:
                out = hadamard(out, self.rebuild(a))
        elif isinstance(e, HadamardPower):
            base, k = self.rebuild(e.base), self.walk(e.exp)
            c, fs = base.as_coeff_matrices() if isinstance(base, MatMul) else (1, [base])
            out = mat(c ** k, HadamardPow(fs[0], k)) if len(fs) == 1 else HadamardPow(base, k)
        elif isinstance(e, ElementwiseApplyFunction):
            inner = self.rebuild(e.expr)
            out = e if inner is e.expr else ElementwiseApplyFunction(e.function, inner)
        elif isinstance(e, MatMul):
            c, (f,) = e.as_coeff_matrices()
            out = _product(mat(self.walk(c), self.rebuild(f)))
        else:
            out = e
        self.rebuilt[e] = out
        return out

    def coefficient(self, c):
        """A scalar (a coefficient, an exponent, a function body) with the parts that hold
        matrices as leaves."""
        if not isinstance(c, sympy.Basic) or not c.has(MatrixExpr):
            return c
        if isinstance(c, (Trace, OpCall)) or not c.args or isinstance(c, MatrixExpr):
            return self.leaf(c)
        if isinstance(c, sympy.Expr) and not isinstance(c, (
                sympy.Add, sympy.Mul, sympy.Pow, Piecewise, sympy.Function)):
            return self.leaf(c)
        return c.func(*[self.coefficient(a) for a in c.args])

    def restore(self, s):
        return s.xreplace(self.back) if self.back else s

    def _holds(self, s):
        return self.matrices & s.free_symbols

    def matrix(self, s):
        """The scalar expression ``s`` back as a matrix formula (None if it has no
        elementwise reading)."""
        held = self._holds(s)
        if not held:
            value = self.restore(s)
            if value == 0:
                return ZeroMatrix(*self.shape)
            return mat(value, Ones(*self.shape))
        if s in self.matrices:
            return self.back[s]
        if isinstance(s, sympy.Add):
            terms = [self.matrix(a) for a in s.args]
            return None if None in terms else add(*terms)
        if isinstance(s, sympy.Mul):
            const = [a for a in s.args if not self._holds(a)]
            parts = [self.matrix(a) for a in s.args if self._holds(a)]
            if None in parts:
                return None
            parts.sort(key=lambda p: isinstance(p, MatAdd))     # σ(x) ∘ (𝟙 − σ(x))
            out = parts[0]
            for p in parts[1:]:
                out = hadamard(out, p)
            return mat(self.restore(sympy.Mul(*const)), out)
        if isinstance(s, sympy.Pow) and not self._holds(s.exp):
            base = self.matrix(s.base)
            return None if base is None else HadamardPow(base, self.restore(s.exp))
        holding = [k for k, a in enumerate(s.args) if self._holds(a)]
        if isinstance(s, sympy.Function) and len(holding) == 1:
            k = holding[0]
            inner = self.matrix(s.args[k])
            if inner is None:
                return None
            args = [self.restore(a) for a in s.args]
            return elementwise(lambda d: s.func(*args[:k], d, *args[k + 1:]), inner)
        if len(held) == 1:
            (u,) = held
            return elementwise(lambda d: self.restore(s.xreplace({u: d})), self.back[u])
        return None


def _product(e):
    """A product in its print form (the rules below)."""
    return _unguarded_product(_softmax(_cancelled_inverses(e)))


def _unguarded_product(e):
    """c {0 if ‖x‖ = 0; s} x is c s x when s is finite at ‖x‖ = 0: x is 0 there, so the
    guard cannot change the product."""
    if not isinstance(e, MatMul):
        return e
    c, fs = e.as_coeff_matrices()
    changed = False
    factors = list(sympy.Mul.make_args(c))
    for k, f in enumerate(factors):
        if not (isinstance(f, Piecewise) and len(f.args) == 2 and f.args[0].expr == 0
                and f.args[1].cond == sympy.true):
            continue
        cond, other = f.args[0].cond, f.args[1].expr
        if not isinstance(cond, sympy.Eq) or cond.rhs != 0:
            continue
        norm = cond.lhs
        if not (isinstance(norm, OpCall) and norm.display == "‖‖" and norm.operands
                and norm.operands[0] in fs):
            continue
        at_zero = other.xreplace({norm: sympy.S.Zero})
        if at_zero.is_finite:
            factors[k] = other
            changed = True
    return mat(sympy.Mul(*factors), *fs) if changed else e


def _cancelled_inverses(e):
    """A product through the inverse of a product of square matrices, (P Q R)⁻¹ =
    R⁻¹ Q⁻¹ P⁻¹, when a factor then cancels against its neighbour: Aᵀ (Bᵀ Xᵀ Aᵀ)⁻¹ Bᵀ is
    X⁻ᵀ for square A, B, X (the inverse exists only if each factor is invertible)."""
    if not isinstance(e, MatMul):
        return e
    c, fs = e.as_coeff_matrices()
    out, expanded = [], False
    for f in fs:
        parts = _inverse_factors(f)
        if parts is None:
            out.append(f)
        else:
            out += parts
            expanded = True
    if not expanded:
        return e
    kept = []
    for f in out:
        if kept and (kept[-1] == _inverse(f) or f == _inverse(kept[-1])):
            kept.pop()
        else:
            kept.append(f)
    if len(kept) >= len(fs):
        return e
    return mat(c, *kept) if kept else mat(c, sympy.Identity(e.shape[0]))


def _inverse_factors(f):
    """[R⁻¹, Q⁻¹, P⁻¹] for (P Q R)⁻¹ (or its transpose) of square factors, else None."""
    t = isinstance(f, Transpose)
    inner = f.arg if t else f
    if not isinstance(inner, Inverse) or not isinstance(inner.arg, MatMul):
        return None
    c, fs = inner.arg.as_coeff_matrices()
    if c != 1 or not all(g.is_square for g in fs):
        return None
    parts = [_inverse(g) for g in reversed(fs)]
    return [transpose(p) for p in reversed(parts)] if t else parts


def _inverse(f):
    """f⁻¹ with (Aᵀ)⁻¹ written A⁻ᵀ and (A⁻¹)⁻¹ written A."""
    if isinstance(f, Inverse):
        return f.arg
    if isinstance(f, Transpose) and isinstance(f.arg, Inverse):
        return transpose(f.arg.arg)
    if isinstance(f, Transpose):
        return transpose(Inverse(f.arg))
    return Inverse(f)


def _softmax(e):
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
