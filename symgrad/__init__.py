"""symgrad: the gradient function, not the gradient at a point.

Trace a Python function into a DAG of ops, differentiate it in one reverse sweep with
per-op rules kept as data in ``rules/``, and get the gradient as formulas, a straight-line
program, and compiled NumPy or PyTorch code checked against ``torch.autograd``.
"""
from .api import GradFn, TensorSpec, grad, grad_fn
from .errors import (ArgumentError, CheckError, ControlFlowError, NonScalarOutputError,
                     NotDifferentiableError, OperandError, RuleError, ShapeError,
                     SymgradError, UnsupportedOpError)
from .graph import Tensor, const, symbol
from .ops import (abs, acos, add, asin, atan, broadcast_to, cast, clamp, cos, cosh, detach, div,
                  eq, erf, exp, expm1, ge, gt, le, log, log1p, logical_and, logical_not,
                  logical_or, lt, matmul, maximum, mean, minimum, mul, ne, neg, pow, relu,
                  reshape, sigmoid, sign, sin, sinh, softplus, sqrt, square, squeeze,
                  stop_gradient, sub, sum, tan, tanh, transpose, unsqueeze, where)
from .linalg import (cholesky, det, diag, diagonal, dot, eye, inv, inverse, logabsdet, logdet,
                     norm, outer, slogdet, solve, trace, tril, triu)
from .reductions import amax, amin, cumsum, max, min, prod, std, var
from .nn import (binary_cross_entropy_with_logits, cross_entropy, log_softmax, logsumexp,
                 mse_loss, one_hot, softmax)
from .indexing import cat, concatenate, stack
from .rules import Rule, rules
from .check import CheckReport, check
from .torch_module import module_function
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .function import Function, FunctionError
from .graphview import print_graph, to_dot
from .transforms import Hessian, Jacobian, hessian, hvp, jacobian, jvp, vjp

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
    # ops
    "abs", "acos", "add", "asin", "atan", "broadcast_to", "cast", "clamp", "cos", "cosh", "detach",
    "div", "eq", "erf", "exp", "expm1", "ge", "gt", "le", "log", "log1p", "logical_and",
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
    "cat", "concatenate", "stack",
    # errors
    "SymgradError", "ShapeError", "UnsupportedOpError", "NonScalarOutputError",
    "ControlFlowError", "RuleError", "NotDifferentiableError", "ArgumentError", "CheckError",
    "FunctionError", "OperandError",
]
