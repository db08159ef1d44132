"""symgrad: the gradient function, not the gradient at a point.

Trace a Python function into a DAG of ops, differentiate it in one reverse sweep with
per-op rules kept as data in ``rules/``, and get the gradient as formulas, a straight-line
program, and compiled NumPy or PyTorch code checked against ``torch.autograd``.

The package is layered (see the README's "How it works"): ``core`` (the traced graph and
the op registry), ``diff`` (rules and sweeps), ``views`` (printers), ``codegen``
(backends), ``torchfront`` (PyTorch code in); this module only re-exports.
"""
from . import codegen, diff, torchfront, views  # noqa: F401  (fill core's service slots)
from .api import GradFn, Hessian, Jacobian, grad, grad_fn, hessian, hvp, jacobian, jvp, vjp
from .check import CheckReport, check
from .core.build import const, symbol
from .core.constructors import full, full_like, ones, ones_like, zeros, zeros_like
from .core.grad_mode import enable_grad, is_grad_enabled, no_grad
from .core.optional import MissingDependencyError
from .core.graph import Tensor
from .core.ops.conv import conv, conv_transpose, conv_weight
from .core.ops.gather import put_along_add, take, take_add, take_along
from .core.ops.im2col import fold, unfold
from .core.ops.indexing import cat, concatenate, stack
from .core.ops.linalg import (cholesky, det, diag, diagonal, dot, eye, inv, inverse, logabsdet,
                              logdet, matmul, outer, slogdet, solve, trace, tril, triu)
from .core.ops.norms import norm
from .core.ops.nn import (binary_cross_entropy_with_logits, cross_entropy, log_softmax,
                          logsumexp, mse_loss, one_hot, softmax)
from .core.ops.pointwise import (abs, acos, add, asin, atan, atan2, cast, clamp, cos, cosh,
                                 detach, div, eq, erf, exp, expm1, ge, gt, hypot, isnan, le, log,
                                 log1p, logaddexp, logical_and, logical_not, logical_or, lt,
                                 maximum, minimum, mul, ne, neg, pow, relu, sigmoid, sign, sin,
                                 sinh, softplus, sqrt, square, stop_gradient, sub, tan, tanh,
                                 where)
from .core.ops.reductions import amax, amin, cumsum, max, mean, min, prod, std, sum, var
from .core.ops.shape import broadcast_to, flip, reshape, squeeze, transpose, unsqueeze
from .core.shapes import TensorSpec
from .diff.function import Function, FunctionError
from .diff.rules import Rule, rules
from .docstrings import attach_examples as _attach_examples
from .errors import (ArgumentError, CheckError, ControlFlowError, EvaluationError,
                     NonScalarOutputError, NotDifferentiableError, OperandError,
                     ParameterError, RegistryError, RuleError, ShapeError, SymgradError,
                     UnsupportedOpError)
from .torchfront.module import module_function
from .views.graph import print_graph, to_dot

__version__ = "0.1.0"

__all__ = [
    # tracing and differentiation
    "symbol", "const", "Tensor", "TensorSpec", "grad_fn", "GradFn", "grad", "check",
    "CheckReport", "rules", "Rule",
    # PyTorch front end
    "module_function",
    # transforms, custom ops and the graph (torch.func / torch.autograd conventions)
    "vjp", "jvp", "jacobian", "hessian", "hvp", "Jacobian", "Hessian", "no_grad",
    "enable_grad", "is_grad_enabled", "Function", "print_graph", "to_dot",
    # constructors
    "zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
    # ops
    "abs", "acos", "add", "asin", "atan", "atan2", "broadcast_to", "cast", "clamp", "cos", "cosh",
    "detach", "div", "eq", "erf", "exp", "expm1", "flip", "ge", "gt", "hypot", "isnan", "le", "log",
    "log1p",
    "logaddexp", "logical_and",
    "logical_not", "logical_or", "lt", "matmul", "maximum", "mean", "minimum", "mul", "ne",
    "neg", "pow", "relu", "reshape", "sigmoid", "sign", "sin", "sinh", "softplus", "sqrt",
    "square", "squeeze", "stop_gradient", "sub", "sum", "tan", "tanh", "transpose",
    "unsqueeze", "where",
    # linear algebra
    "cholesky", "det", "diag", "diagonal", "dot", "eye", "inv", "inverse", "logabsdet",
    "logdet", "norm", "outer", "slogdet", "solve", "trace", "tril", "triu",
    # reductions
    "amax", "amin", "cumsum", "max", "min", "prod", "std", "var",
    # neural networks
    "binary_cross_entropy_with_logits", "cross_entropy", "log_softmax", "logsumexp",
    "mse_loss", "one_hot", "softmax",
    # indexing and joining
    "cat", "concatenate", "stack", "take", "take_add", "take_along", "put_along_add",
    # convolutions
    "conv", "conv_transpose", "conv_weight", "fold", "unfold",
    # errors
    "SymgradError", "ShapeError", "UnsupportedOpError", "NonScalarOutputError",
    "ControlFlowError", "RuleError", "NotDifferentiableError", "ArgumentError", "CheckError",
    "FunctionError", "OperandError", "ParameterError", "RegistryError", "EvaluationError",
    "MissingDependencyError",
]

_attach_examples(globals())  # the examples of the ops and lower-layer classes
