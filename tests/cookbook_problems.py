"""Matrix-calculus problems with their textbook answers (Matrix Cookbook and
matrixcalculus.org style), for ``tests/test_cookbook.py``.

Each problem is one function written once over an ops namespace ``o`` (``sg`` when
symgrad traces it, ``TorchOps`` when torch.autograd computes the reference), the shapes
of its inputs, the input (``key``) whose gradient or Hessian it asks for, the domain its
inputs are drawn from, and the answer as a textbook writes it, built from SymPy's matrix
classes over MatrixSymbols of the same dims. Vectors are columns; answers are for general
(not symmetric) matrices unless the function makes them symmetric itself. Answers are
built with SymPy's constructors (``mm``, ``ma``), not its operators, which would
canonicalise them (``2 (A + Aᵀ)`` into ``2 A + 2 Aᵀ``, det(AXB) into det A det X det B)
and so print them longer than a textbook does. Nothing here comes from symgrad.
"""
import sympy
import torch
import torch.nn.functional as F
from sympy import (Determinant, HadamardPower, HadamardProduct, Identity, Inverse, MatAdd,
                   MatMul, MatrixExpr, OneMatrix, Trace, Transpose, exp, tanh)
from sympy.matrices.expressions.diagonal import DiagMatrix

import symgrad as sg

half = sympy.Rational(1, 2)


class TorchOps:
    """The sg ops the problems use, as torch's own functions (the independent reference)."""
    exp, log, tanh, sigmoid, relu, sqrt, cos = (torch.exp, torch.log, torch.tanh,
                                                torch.sigmoid, torch.relu, torch.sqrt,
                                                torch.cos)
    trace, det, logdet, inv, outer = (torch.trace, torch.linalg.det, torch.logdet,
                                      torch.linalg.inv, torch.outer)
    softplus = staticmethod(F.softplus)

    @staticmethod
    def sum(x, axis=None):
        return torch.sum(x) if axis is None else torch.sum(x, dim=axis)

    @staticmethod
    def mean(x):
        return torch.mean(x)

    @staticmethod
    def norm(x):
        return torch.linalg.vector_norm(x)

    @staticmethod
    def logabsdet(x):
        return torch.linalg.slogdet(x)[1]

    @staticmethod
    def solve(a, b):
        return torch.linalg.solve(a, b)

    @staticmethod
    def softmax(x, axis=-1):
        return torch.softmax(x, dim=axis)

    @staticmethod
    def log_softmax(x, axis=-1):
        return torch.log_softmax(x, dim=axis)

    @staticmethod
    def logsumexp(x, axis=None):
        return torch.logsumexp(x, dim=tuple(range(x.ndim)) if axis is None else axis)

    @staticmethod
    def binary_cross_entropy_with_logits(x, y, reduction="mean"):
        return F.binary_cross_entropy_with_logits(x, y, reduction=reduction)

    @staticmethod
    def mse_loss(x, y):
        return F.mse_loss(x, y)


# ----- textbook notation the answers need ------------------------------------------------

class σ(sympy.Function):  # noqa: N801 - printed by its class name, as textbooks write it
    """The logistic function, elementwise in answers (``sig(M)``)."""

    @classmethod
    def eval(cls, a):
        if a.is_Number:
            return 1 / (1 + exp(-a))


class relu(sympy.Function):  # noqa: N801
    @classmethod
    def eval(cls, a):
        if a.is_Number:
            return sympy.Max(a, 0)


class Norm(sympy.Expr):
    """‖v‖, the Euclidean (Frobenius) norm of a matrix expression."""
    is_commutative = True
    is_real = True
    is_positive = True

    def __new__(cls, arg):
        return sympy.Basic.__new__(cls, arg)

    def doit(self, **hints):
        a = self.args[0].doit(**hints) if hints.get("deep", True) else self.args[0]
        if isinstance(a, sympy.MatrixBase):
            return sympy.sqrt(sum(t ** 2 for t in a))
        return Norm(a)

    def _sympystr(self, printer):
        return f"‖{printer._print(self.args[0])}‖"


class Softmax(MatrixExpr):
    """softmax of a column vector, or of each row of a matrix (torch's axis=-1)."""

    def __new__(cls, arg):
        return sympy.Basic.__new__(cls, arg)

    @property
    def arg(self):
        return self.args[0]

    @property
    def shape(self):
        return self.arg.shape

    def doit(self, **hints):
        a = self.arg.doit(**hints) if hints.get("deep", True) else self.arg
        if not isinstance(a, sympy.MatrixBase):
            return Softmax(a)
        e = a.applyfunc(exp)
        if e.shape[1] == 1:
            return sympy.ImmutableMatrix(e / sum(e))
        return sympy.ImmutableMatrix(e.shape[0], e.shape[1], lambda i, j: e[i, j] / sum(
            e[i, :]))

    def _sympystr(self, printer):
        return f"softmax({printer._print(self.arg)})"


def mm(*factors):
    """A product as written (no canonicalisation)."""
    return MatMul(*factors)


def ma(*terms):
    """A sum as written."""
    return MatAdd(*terms)


def sub(a, b):
    """a − b as written (a product b keeps its factors: a − p pᵀ)."""
    return MatAdd(a, MatMul(-1, *(b.args if isinstance(b, MatMul) else (b,))))


def T(m):
    return Transpose(m)


def sig(m):
    return m.applyfunc(σ)


def ex(m):
    return m.applyfunc(exp)


def th(m):
    return m.applyfunc(tanh)


def s(m):
    """A 1×1 product as the scalar it is (xᵀx)."""
    return Trace(m)


def one(rows, cols=1):
    return OneMatrix(rows, cols)


def diag(v):
    return DiagMatrix(v)


def had(*ms):
    return HadamardProduct(*ms)


def sq(m):
    return HadamardPower(m, 2)


def inv(m):
    return Inverse(m)


def det(m):
    return Determinant(m)


def softmax_jacobian(p):
    return sub(diag(p), mm(p, T(p)))


# ----- the problems ------------------------------------------------------------------------

class Problem:
    def __init__(self, name, f, shapes, key, textbook, domain=None, hessian=False):
        self.name, self.f, self.shapes, self.key = name, f, shapes, key
        self.textbook, self.domain, self.hessian = textbook, domain or {}, hessian

    def __repr__(self):
        return self.name


V, M, SQ = ("n",), ("m", "n"), ("n", "n")
PROBLEMS = []


def P(name, f, shapes, key, textbook, domain=None, hessian=False):
    PROBLEMS.append(Problem(name, f, shapes, key, textbook, domain, hessian))


# linear and quadratic forms
lin = dict(x=V, a=V)
P("aᵀx / x", lambda x, a, o=sg: a @ x, lin, "x", lambda x, a: a)
P("aᵀx / a", lambda x, a, o=sg: a @ x, lin, "a", lambda x, a: x)
P("xᵀx / x", lambda x, o=sg: x @ x, dict(x=V), "x", lambda x: mm(2, x))
ls = dict(x=V, B=M, b=("m",))
P("bᵀBx / x", lambda x, B, b, o=sg: b @ (B @ x), ls, "x", lambda x, B, b: mm(B.T, b))
P("bᵀBx / B", lambda x, B, b, o=sg: b @ (B @ x), ls, "B", lambda x, B, b: mm(b, x.T))
quad = dict(x=V, A=SQ)
P("xᵀAx / x", lambda x, A, o=sg: x @ A @ x, quad, "x", lambda x, A: mm(ma(A, A.T), x))
P("xᵀAx / A", lambda x, A, o=sg: x @ A @ x, quad, "A", lambda x, A: mm(x, x.T))
P("xᵀ(A+Aᵀ)x / x", lambda x, A, o=sg: x @ (A + A.T) @ x, quad, "x",
  lambda x, A: mm(2, ma(A, A.T), x))
P("xᵀ(A+Aᵀ)x / A", lambda x, A, o=sg: x @ (A + A.T) @ x, quad, "A",
  lambda x, A: mm(2, x, x.T))
bil = dict(a=V, X=("n", "m"), b=("m",))
P("aᵀXb / X", lambda a, X, b, o=sg: a @ X @ b, bil, "X", lambda a, X, b: mm(a, b.T))
P("bᵀXᵀa / X", lambda a, X, b, o=sg: b @ X.T @ a, bil, "X", lambda a, X, b: mm(a, b.T))
P("aᵀXb / a", lambda a, X, b, o=sg: a @ X @ b, bil, "a", lambda a, X, b: mm(X, b))
P("sum(x) / x", lambda x, o=sg: o.sum(x), dict(x=V), "x", lambda x: one(x.shape[0]))
P("sum(Bx) / x", lambda x, B, o=sg: o.sum(B @ x), dict(x=V, B=M), "x",
  lambda x, B: mm(B.T, one(B.shape[0])))
P("sum(x)² / x", lambda x, o=sg: o.sum(x) ** 2, dict(x=V), "x",
  lambda x: mm(2, s(mm(one(x.shape[0]).T, x)), one(x.shape[0])))
P("(aᵀx)² / x", lambda x, a, o=sg: (a @ x) ** 2, lin, "x",
  lambda x, a: mm(2, s(mm(a.T, x)), a))
P("(aᵀx)³ / x", lambda x, a, o=sg: (a @ x) ** 3, lin, "x",
  lambda x, a: mm(3, s(mm(a.T, x)) ** 2, a))
P("1/(aᵀx) / x", lambda x, a, o=sg: 1 / (a @ x), lin, "x",
  lambda x, a: mm(-1 / s(mm(a.T, x)) ** 2, a), dict(x="pos", a="pos"))
P("log(aᵀx) / x", lambda x, a, o=sg: o.log(a @ x), lin, "x",
  lambda x, a: mm(1 / s(mm(a.T, x)), a), dict(x="pos", a="pos"))
P("aᵀ(x∘x) / x", lambda x, a, o=sg: o.sum(a * x ** 2), lin, "x",
  lambda x, a: mm(2, had(a, x)))
P("sum(x∘y) / x", lambda x, y, o=sg: o.sum(x * y), dict(x=V, y=V), "x", lambda x, y: y)

# traces
tr1 = dict(X=SQ, A=SQ)
tr2 = dict(X=SQ, A=SQ, B=SQ)
P("tr(X) / X", lambda X, o=sg: o.trace(X), dict(X=SQ), "X", lambda X: Identity(X.shape[0]))
P("tr(AX) / X", lambda X, A, o=sg: o.trace(A @ X), tr1, "X", lambda X, A: A.T)
P("tr(XA) / X", lambda X, A, o=sg: o.trace(X @ A), tr1, "X", lambda X, A: A.T)
P("tr(XᵀA) / X", lambda X, A, o=sg: o.trace(X.T @ A), tr1, "X", lambda X, A: A)
P("tr(AXB) / X", lambda X, A, B, o=sg: o.trace(A @ X @ B), tr2, "X",
  lambda X, A, B: mm(A.T, B.T))
P("tr(XᵀAX) / X", lambda X, A, o=sg: o.trace(X.T @ A @ X), tr1, "X",
  lambda X, A: mm(ma(A, A.T), X))
P("tr(XAXᵀ) / X", lambda X, A, o=sg: o.trace(X @ A @ X.T), tr1, "X",
  lambda X, A: mm(X, ma(A, A.T)))
P("tr(XᵀAXB) / X", lambda X, A, B, o=sg: o.trace(X.T @ A @ X @ B), tr2, "X",
  lambda X, A, B: ma(mm(A, X, B), mm(A.T, X, B.T)))
P("tr(XX) / X", lambda X, o=sg: o.trace(X @ X), dict(X=SQ), "X", lambda X: mm(2, X.T))
P("tr(XᵀX) / X", lambda X, o=sg: o.trace(X.T @ X), dict(X=SQ), "X", lambda X: mm(2, X))
P("tr(XXX) / X", lambda X, o=sg: o.trace(X @ X @ X), dict(X=SQ), "X",
  lambda X: mm(3, T(mm(X, X))))
P("tr(X)² / X", lambda X, o=sg: o.trace(X) ** 2, dict(X=SQ), "X",
  lambda X: mm(2, Trace(X), Identity(X.shape[0])))
P("tr(X⁻¹A) / X", lambda X, A, o=sg: o.trace(o.inv(X) @ A), tr1, "X",
  lambda X, A: mm(-1, inv(X).T, A.T, inv(X).T), dict(X="sq"))
P("tr(AX⁻¹B) / X", lambda X, A, B, o=sg: o.trace(A @ o.inv(X) @ B), tr2, "X",
  lambda X, A, B: mm(-1, inv(X).T, A.T, B.T, inv(X).T), dict(X="sq"))
P("tr(BX) rect / X", lambda X, B, o=sg: o.trace(B @ X), dict(X=("n", "m"), B=M), "X",
  lambda X, B: B.T)
P("tr(X⁻¹) / X", lambda X, o=sg: o.trace(o.inv(X)), dict(X=SQ), "X",
  lambda X: mm(-1, inv(X).T, inv(X).T), dict(X="sq"))

# determinants
P("det X / X", lambda X, o=sg: o.det(X), dict(X=SQ), "X", lambda X: mm(det(X), inv(X).T),
  dict(X="sq"))
P("log det X / X", lambda X, o=sg: o.logdet(X), dict(X=SQ), "X", lambda X: inv(X).T,
  dict(X="pd"))
P("log|det X| / X", lambda X, o=sg: o.logabsdet(X), dict(X=SQ), "X", lambda X: inv(X).T,
  dict(X="sq"))
P("det(AXB) / X", lambda X, A, B, o=sg: o.det(A @ X @ B), tr2, "X",
  lambda X, A, B: mm(det(mm(A, X, B)), inv(X).T), dict(X="sq", A="sq", B="sq"))
P("det(X)² / X", lambda X, o=sg: o.det(X) ** 2, dict(X=SQ), "X",
  lambda X: mm(2, det(X) ** 2, inv(X).T), dict(X="sq"))
P("log det(XᵀX) / X", lambda X, o=sg: o.logdet(X.T @ X), dict(X=("k", "n")), "X",
  lambda X: mm(2, X, inv(mm(X.T, X))))
P("log det(X+A) / A", lambda X, A, o=sg: o.logdet(X + A), tr1, "A",
  lambda X, A: inv(ma(X, A)).T, dict(X="pd", A="pdsmall"))

# inverses
inv3 = dict(X=SQ, a=V, b=V)
P("aᵀX⁻¹b / X", lambda X, a, b, o=sg: a @ o.inv(X) @ b, inv3, "X",
  lambda X, a, b: mm(-1, inv(X).T, a, b.T, inv(X).T), dict(X="sq"))
P("aᵀX⁻¹b / b", lambda X, a, b, o=sg: a @ o.inv(X) @ b, inv3, "b",
  lambda X, a, b: mm(inv(X).T, a), dict(X="sq"))
P("aᵀ solve(X, b) / X", lambda X, a, b, o=sg: a @ o.solve(X, b), inv3, "X",
  lambda X, a, b: mm(-1, inv(X).T, a, b.T, inv(X).T), dict(X="sq"))
P("sum(X⁻¹) / X", lambda X, o=sg: o.sum(o.inv(X)), dict(X=SQ), "X",
  lambda X: mm(-1, inv(X).T, one(X.shape[0], X.shape[0]), inv(X).T), dict(X="sq"))
P("xᵀS⁻¹x / x", lambda x, S, o=sg: x @ o.inv(S) @ x, dict(x=V, S=SQ), "x",
  lambda x, S: mm(ma(inv(S), inv(S).T), x), dict(S="pd"))

# norms, least squares, ridge


def res(B, x, b):
    return sub(mm(B, x), b)


P("‖x‖² / x", lambda x, o=sg: o.sum(x ** 2), dict(x=V), "x", lambda x: mm(2, x))
P("norm(x)² / x", lambda x, o=sg: o.norm(x) ** 2, dict(x=V), "x", lambda x: mm(2, x))
P("‖x‖ / x", lambda x, o=sg: o.norm(x), dict(x=V), "x", lambda x: mm(1 / Norm(x), x))
P("‖X‖_F² / X", lambda X, o=sg: o.sum(X ** 2), dict(X=M), "X", lambda X: mm(2, X))
P("‖X‖_F / X", lambda X, o=sg: o.norm(X), dict(X=M), "X", lambda X: mm(1 / Norm(X), X))
P("‖Bx − b‖² / x", lambda x, B, b, o=sg: o.sum((B @ x - b) ** 2), ls, "x",
  lambda x, B, b: mm(2, B.T, res(B, x, b)))
P("‖Bx − b‖² / B", lambda x, B, b, o=sg: o.sum((B @ x - b) ** 2), ls, "B",
  lambda x, B, b: mm(2, res(B, x, b), x.T))
P("‖Bx − b‖² / b", lambda x, B, b, o=sg: o.sum((B @ x - b) ** 2), ls, "b",
  lambda x, B, b: mm(-2, res(B, x, b)))
P("‖Bx − b‖ / x", lambda x, B, b, o=sg: o.norm(B @ x - b), ls, "x",
  lambda x, B, b: mm(1 / Norm(res(B, x, b)), B.T, res(B, x, b)))
P("mean((Bx − b)²) / x", lambda x, B, b, o=sg: o.mean((B @ x - b) ** 2), ls, "x",
  lambda x, B, b: mm(2 / B.shape[0], B.T, res(B, x, b)))
P("mse_loss(Bx, b) / x", lambda x, B, b, o=sg: o.mse_loss(B @ x, b), ls, "x",
  lambda x, B, b: mm(2 / B.shape[0], B.T, res(B, x, b)))
ridge = dict(x=V, B=M, b=("m",), lam=())
ridge_loss = (lambda x, B, b, lam, o=sg:
              o.sum((B @ x - b) ** 2) + lam * o.sum(x ** 2))
P("ridge / x", ridge_loss, ridge, "x",
  lambda x, B, b, lam: ma(mm(2, B.T, res(B, x, b)), mm(2, lam, x)))
P("ridge / λ", ridge_loss, ridge, "lam", lambda x, B, b, lam: s(mm(x.T, x)))
mf = dict(X=M, A=("m", "k"), B=("k", "n"))
P("‖X − AB‖_F² / A", lambda X, A, B, o=sg: o.sum((X - A @ B) ** 2), mf, "A",
  lambda X, A, B: mm(2, sub(mm(A, B), X), B.T))
P("‖X − AB‖_F² / B", lambda X, A, B, o=sg: o.sum((X - A @ B) ** 2), mf, "B",
  lambda X, A, B: mm(2, A.T, sub(mm(A, B), X)))
P("‖X − A‖_F² / X", lambda X, A, o=sg: o.sum((X - A) ** 2), dict(X=M, A=M), "X",
  lambda X, A: mm(2, sub(X, A)))

# logistic regression, softmax cross-entropy, log-sum-exp
lr = dict(w=V, X=M, y=("m",))
y01 = dict(y="01")


def lr_grad(w, X, y):
    return mm(X.T, sub(sig(mm(X, w)), y))


bce_sum = (lambda w, X, y, o=sg:
           o.binary_cross_entropy_with_logits(X @ w, y, reduction="sum"))
P("logistic loss (sum) / w", bce_sum, lr, "w", lr_grad, y01)
P("logistic loss (sum) / X", bce_sum, lr, "X",
  lambda w, X, y: mm(sub(sig(mm(X, w)), y), w.T), y01)
P("logistic loss (mean) / w",
  lambda w, X, y, o=sg: o.binary_cross_entropy_with_logits(X @ w, y), lr, "w",
  lambda w, X, y: mm(1 / X.shape[0], X.T, sub(sig(mm(X, w)), y)), y01)
P("softplus(Xw) − yᵀXw / w",
  lambda w, X, y, o=sg: o.sum(o.softplus(X @ w)) - y @ (X @ w), lr, "w", lr_grad, y01)
P("log(1+exp(Xw)) − yᵀXw / w",
  lambda w, X, y, o=sg: o.sum(o.log(1 + o.exp(X @ w))) - y @ (X @ w), lr, "w", lr_grad,
  y01)
P("−ylog σ − (1−y)log(1−σ) / w",
  lambda w, X, y, o=sg: -o.sum(y * o.log(o.sigmoid(X @ w))
                               + (1 - y) * o.log(1 - o.sigmoid(X @ w))), lr, "w", lr_grad,
  y01)
ce = dict(z=("k",), y=("k",))
prob = dict(y="prob")


def ce_grad(z, y):
    return sub(mm(s(mm(one(z.shape[0]).T, y)), Softmax(z)), y)


P("−yᵀlog_softmax(z) / z", lambda z, y, o=sg: -(y @ o.log_softmax(z)), ce, "z", ce_grad,
  prob)
P("logsumexp(z) / z", lambda z, o=sg: o.logsumexp(z), dict(z=("k",)), "z",
  lambda z: Softmax(z))
P("log(sum(exp(z))) / z", lambda z, o=sg: o.log(o.sum(o.exp(z))), dict(z=("k",)), "z",
  lambda z: Softmax(z))
sr = dict(W=("k", "n"), x=V, y=("k",))
softmax_reg = lambda W, x, y, o=sg: -(y @ o.log_softmax(W @ x))  # noqa: E731
P("−yᵀlog softmax(Wx) / W", softmax_reg, sr, "W",
  lambda W, x, y: mm(ce_grad(mm(W, x), y), x.T), prob)
P("−yᵀlog softmax(Wx) / x", softmax_reg, sr, "x",
  lambda W, x, y: mm(W.T, ce_grad(mm(W, x), y)), prob)

# Gaussian log-likelihood (covariance S, precision P; general matrices)
gauss_cov = (lambda x, mu, S, o=sg:
             -0.5 * ((x - mu) @ o.inv(S) @ (x - mu)) - 0.5 * o.logdet(S))
gauss_prec = (lambda x, mu, P, o=sg:
              0.5 * o.logdet(P) - 0.5 * ((x - mu) @ P @ (x - mu)))
gs = dict(x=V, mu=V, S=SQ)
gp = dict(x=V, mu=V, P=SQ)
P("Gaussian(Σ) / μ", gauss_cov, gs, "mu",
  lambda x, mu, S: mm(half, ma(inv(S), inv(S).T), sub(x, mu)), dict(S="pd"))
P("Gaussian(Σ) / Σ", gauss_cov, gs, "S",
  lambda x, mu, S: mm(half, sub(mm(inv(S).T, sub(x, mu), T(sub(x, mu)), inv(S).T),
                                inv(S).T)), dict(S="pd"))
P("Gaussian(Λ) / μ", gauss_prec, gp, "mu",
  lambda x, mu, P: mm(half, ma(P, P.T), sub(x, mu)), dict(P="pd"))
P("Gaussian(Λ) / Λ", gauss_prec, gp, "P",
  lambda x, mu, P: mm(half, sub(inv(P).T, mm(sub(x, mu), T(sub(x, mu))))), dict(P="pd"))

# elementwise functions
P("sum(exp(x)) / x", lambda x, o=sg: o.sum(o.exp(x)), dict(x=V), "x", lambda x: ex(x))
P("sum(log(x)) / x", lambda x, o=sg: o.sum(o.log(x)), dict(x=V), "x",
  lambda x: HadamardPower(x, -1), dict(x="pos"))
P("sum(sqrt(x)) / x", lambda x, o=sg: o.sum(o.sqrt(x)), dict(x=V), "x",
  lambda x: mm(half, HadamardPower(x, -half)), dict(x="pos"))
P("sum(x³) / x", lambda x, o=sg: o.sum(x ** 3), dict(x=V), "x", lambda x: mm(3, sq(x)))
P("aᵀexp(x) / x", lambda x, a, o=sg: a @ o.exp(x), lin, "x", lambda x, a: had(a, ex(x)))
P("sum(exp(Bx)) / x", lambda x, B, o=sg: o.sum(o.exp(B @ x)), dict(x=V, B=M), "x",
  lambda x, B: mm(B.T, ex(mm(B, x))))


def dsig(u, rows):
    return had(sig(u), sub(one(rows), sig(u)))


P("sum(σ(x)) / x", lambda x, o=sg: o.sum(o.sigmoid(x)), dict(x=V), "x",
  lambda x: dsig(x, x.shape[0]))
P("sum(σ(Bx)) / x", lambda x, B, o=sg: o.sum(o.sigmoid(B @ x)), dict(x=V, B=M), "x",
  lambda x, B: mm(B.T, dsig(mm(B, x), B.shape[0])))
layer = dict(x=V, W=M, b=("m",))
tanh_layer = lambda x, W, b, o=sg: o.sum(o.tanh(W @ x + b))  # noqa: E731


def dtanh(u, rows):
    return sub(one(rows), sq(th(u)))


P("sum(tanh(Wx+b)) / W", tanh_layer, layer, "W",
  lambda x, W, b: mm(dtanh(ma(mm(W, x), b), W.shape[0]), x.T))
P("sum(tanh(Wx+b)) / x", tanh_layer, layer, "x",
  lambda x, W, b: mm(W.T, dtanh(ma(mm(W, x), b), W.shape[0])))
P("sum(tanh(Wx+b)) / b", tanh_layer, layer, "b",
  lambda x, W, b: dtanh(ma(mm(W, x), b), W.shape[0]))

# neural layers
net = dict(x=V, W1=M, W2=("k", "m"))
mlp = lambda x, W1, W2, o=sg: o.sum(W2 @ o.tanh(W1 @ x))  # noqa: E731


def mlp_delta(x, W1, W2):
    return had(mm(W2.T, one(W2.shape[0])), dtanh(mm(W1, x), W1.shape[0]))


P("sum(W2 tanh(W1x)) / W2", mlp, net, "W2",
  lambda x, W1, W2: mm(one(W2.shape[0]), T(th(mm(W1, x)))))
P("sum(W2 tanh(W1x)) / W1", mlp, net, "W1",
  lambda x, W1, W2: mm(mlp_delta(x, W1, W2), x.T))
P("sum(W2 tanh(W1x)) / x", mlp, net, "x",
  lambda x, W1, W2: mm(W1.T, mlp_delta(x, W1, W2)))
relu_net = dict(x=V, W=M, v=("m",))
relu_layer = lambda x, W, v, o=sg: v @ o.relu(W @ x)  # noqa: E731
P("vᵀrelu(Wx) / W", relu_layer, relu_net, "W",
  lambda x, W, v: mm(had(v, mm(W, x).applyfunc(lambda t: sympy.Heaviside(t, 0))), x.T))
P("vᵀrelu(Wx) / v", relu_layer, relu_net, "v", lambda x, W, v: mm(W, x).applyfunc(relu))
reg = dict(x=V, W1=M, W2=("k", "m"), y=("k",))
mlp_reg = lambda x, W1, W2, y, o=sg: o.sum((W2 @ o.tanh(W1 @ x) - y) ** 2)  # noqa: E731
P("‖W2 tanh(W1x) − y‖² / W2", mlp_reg, reg, "W2",
  lambda x, W1, W2, y: mm(2, sub(mm(W2, th(mm(W1, x))), y), T(th(mm(W1, x)))))

# attention-like products
att = dict(q=V, K=("k", "n"), V=("k", "m"))
attention = lambda q, K, V, o=sg: o.sum(V.T @ o.softmax(K @ q))  # noqa: E731
P("𝟙ᵀVᵀsoftmax(Kq) / V", attention, att, "V",
  lambda q, K, V: mm(Softmax(mm(K, q)), one(V.shape[1]).T))
P("𝟙ᵀVᵀsoftmax(Kq) / q", attention, att, "q",
  lambda q, K, V: mm(K.T, softmax_jacobian(Softmax(mm(K, q))), V, one(V.shape[1])))
mat_att = dict(Q=("m", "n"), K=("k", "n"), V=("k", "n"))
P("sum(softmax(QKᵀ)V) / V", lambda Q, K, V, o=sg: o.sum(o.softmax(Q @ K.T) @ V), mat_att,
  "V", lambda Q, K, V: mm(T(Softmax(mm(Q, K.T))), one(Q.shape[0], V.shape[1])))

# Hessians
H = dict(hessian=True)
P("H xᵀAx", lambda x, A, o=sg: x @ A @ x, quad, "x", lambda x, A: ma(A, A.T), **H)
P("H xᵀ(A+Aᵀ)x", lambda x, A, o=sg: x @ (A + A.T) @ x, quad, "x",
  lambda x, A: mm(2, ma(A, A.T)), **H)
P("H ‖x‖²", lambda x, o=sg: o.sum(x ** 2), dict(x=V), "x",
  lambda x: mm(2, Identity(x.shape[0])), **H)
P("H ‖Bx − b‖²", lambda x, B, b, o=sg: o.sum((B @ x - b) ** 2), ls, "x",
  lambda x, B, b: mm(2, B.T, B), **H)
P("H ridge", ridge_loss, ridge, "x",
  lambda x, B, b, lam: ma(mm(2, B.T, B), mm(2, lam, Identity(x.shape[0]))), **H)
P("H logistic", bce_sum, lr, "w",
  lambda w, X, y: mm(X.T, diag(dsig(mm(X, w), X.shape[0])), X), y01, **H)
P("H sum(exp(x))", lambda x, o=sg: o.sum(o.exp(x)), dict(x=V), "x", lambda x: diag(ex(x)),
  **H)
P("H logsumexp", lambda z, o=sg: o.logsumexp(z), dict(z=("k",)), "z",
  lambda z: softmax_jacobian(Softmax(z)), **H)
P("H −yᵀlog_softmax(z)", lambda z, y, o=sg: -(y @ o.log_softmax(z)), ce, "z",
  lambda z, y: mm(s(mm(one(z.shape[0]).T, y)), softmax_jacobian(Softmax(z))), prob, **H)
P("H xᵀS⁻¹x", lambda x, S, o=sg: x @ o.inv(S) @ x, dict(x=V, S=SQ), "x",
  lambda x, S: ma(inv(S), inv(S).T), dict(S="pd"), **H)
P("H sum(log(x))", lambda x, o=sg: o.sum(o.log(x)), dict(x=V), "x",
  lambda x: mm(-1, diag(HadamardPower(x, -2))), dict(x="pos"), **H)
P("H sum(tanh(Wx+b))", tanh_layer, layer, "x",
  lambda x, W, b: mm(-2, W.T, diag(had(th(ma(mm(W, x), b)),
                                       dtanh(ma(mm(W, x), b), W.shape[0]))), W), **H)


# stable forms (softplus, σ, ‖x‖), economics (Cobb-Douglas, CES), a pendulum's energy in
# indexed coordinates, and forms usually stated for symmetric matrices, here general
P("sum(log(1+exp(x))) / x", lambda x, o=sg: o.sum(o.log(1 + o.exp(x))), dict(x=V), "x",
  lambda x: sig(x))
P("log(1+exp(aᵀx)) / x", lambda x, a, o=sg: o.log(1 + o.exp(a @ x)), lin, "x",
  lambda x, a: mm(σ(s(mm(a.T, x))), a))
P("sqrt(xᵀx) / x", lambda x, o=sg: o.sqrt(x @ x), dict(x=V), "x", lambda x: mm(1 / Norm(x), x))
P("H sum(softplus(x))", lambda x, o=sg: o.sum(o.softplus(x)), dict(x=V), "x",
  lambda x: diag(dsig(x, x.shape[0])), **H)
P("H (aᵀx)²", lambda x, a, o=sg: (a @ x) ** 2, lin, "x", lambda x, a: mm(2, a, a.T), **H)
P("H (xᵀx)²", lambda x, o=sg: (x @ x) ** 2, dict(x=V), "x",
  lambda x: ma(mm(4, s(mm(x.T, x)), Identity(x.shape[0])), mm(8, x, x.T)), **H)
P("H sum(exp(Bx))", lambda x, B, o=sg: o.sum(o.exp(B @ x)), dict(x=V, B=M), "x",
  lambda x, B: mm(B.T, diag(ex(mm(B, x))), B), **H)
cobb = dict(K=(), L=(), a=())
cobb_douglas = lambda K, L, a, o=sg: K ** a * L ** (1 - a)  # noqa: E731
P("Cobb-Douglas / K", cobb_douglas, cobb, "K", lambda K, L, a: a * K ** (a - 1) * L ** (1 - a),
  dict(K="pos", L="pos", a="pos"))
P("Cobb-Douglas / a", cobb_douglas, cobb, "a",
  lambda K, L, a: K ** a * L ** (1 - a) * (sympy.log(K) - sympy.log(L)),
  dict(K="pos", L="pos", a="pos"))
ces = lambda K, L, r, o=sg: (K ** r + L ** r) ** (1 / r)  # noqa: E731
P("CES / K", ces, dict(K=(), L=(), r=()), "K",
  lambda K, L, r: K ** (r - 1) * (K ** r + L ** r) ** (1 / r - 1), dict(K="pos", L="pos", r="pos"))
pendulum = (lambda q, o=sg:  # q = (angle, angular velocity, length)
            0.5 * q[2] ** 2 * q[1] ** 2 - 9.81 * q[2] * o.cos(q[0]))
g_ = sympy.Float(9.81)


def pendulum_grad(q):
    th, om, ln = q[0, 0], q[1, 0], q[2, 0]
    return sympy.ImmutableMatrix([g_ * ln * sympy.sin(th), ln ** 2 * om,
                                  ln * om ** 2 - g_ * sympy.cos(th)])


def pendulum_hessian(q):
    th, om, ln = q[0, 0], q[1, 0], q[2, 0]
    return sympy.ImmutableMatrix([[g_ * ln * sympy.cos(th), 0, g_ * sympy.sin(th)],
                                  [0, ln ** 2, 2 * om * ln],
                                  [g_ * sympy.sin(th), 2 * om * ln, om ** 2]])


P("pendulum energy / q", pendulum, dict(q=(3,)), "q", pendulum_grad)
P("H pendulum energy", pendulum, dict(q=(3,)), "q", pendulum_hessian, **H)
P("xᵀAᵀAx / x", lambda x, A, o=sg: (A @ x) @ (A @ x), dict(x=V, A=M), "x",
  lambda x, A: mm(2, A.T, A, x))
P("tr(AXAᵀ) / X", lambda X, A, o=sg: o.trace(A @ X @ A.T), dict(X=SQ, A=("m", "n")), "X",
  lambda X, A: mm(A.T, A))
P("xᵀAy / A", lambda x, A, y, o=sg: x @ A @ y, dict(x=("m",), A=M, y=V), "A",
  lambda x, A, y: mm(x, y.T))
