"""Examples for the public functions and classes whose docstrings are written elsewhere.

Most ops are made by small factories (``_unary("sin", ...)`` in ``core/ops/pointwise.py``)
that give every op of a family the same one-line docstring; an example has to show what
one op does, so the examples of every op, and of the classes and helpers defined in the
layers below this package's face, are kept here in one table (as PyTorch keeps its
``_torch_docs.py``) and appended to each object's ``__doc__`` when symgrad is imported.
``tests/test_docs.py`` runs every public object's example as a doctest, these included.
"""
from typing import Any

EXAMPLES = {
    'Tensor': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x", shape=("n",))
    >>> y = (x * 2).sum()
    >>> y
    Tensor(sum(2*x), shape=())
    >>> y.shape, x.shape
    ((), (n,))
    >>> print(y.expr)
    sum(2*x)
""",
    'TensorSpec': """
    >>> import symgrad as sg
    >>> spec = sg.TensorSpec(("B",), dtype="int64")
    >>> spec
    TensorSpec((B,), dtype='int64')
    >>> spec.shape, spec.dtype
    ((B,), 'int64')
""",
    'rules': """
    >>> import symgrad as sg
    >>> print(sg.rules["mul"].vjp_text)
    {'x': 'grad * y', 'y': 'grad * x'}
    >>> "sin" in sg.rules
    True
""",
    'Rule': """
    >>> import symgrad as sg
    >>> r = sg.rules["sin"]
    >>> r.signature
    'sin(x)'
    >>> r.vjp_text
    {'x': 'grad * cos(x)'}
""",
    'module_function': """
    >>> import symgrad as sg
    >>> import torch
    >>> net = torch.nn.Linear(3, 1)
    >>> f = sg.module_function(net, shapes={"input": ("B", 3)}, loss=lambda out: (out ** 2).sum())
    >>> g = sg.grad_fn(f)
    >>> [x.name for x in g.wrt]
    ['W', 'b']
""",
    'no_grad': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> with sg.no_grad():
    ...     y = x * x
    ...
    >>> y.requires_grad, (x * x).requires_grad
    (False, True)
""",
    'enable_grad': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> with sg.no_grad():
    ...     with sg.enable_grad():
    ...         y = x * x
    ...
    >>> y.requires_grad
    True
""",
    'is_grad_enabled': """
    >>> import symgrad as sg
    >>> sg.is_grad_enabled()
    True
    >>> with sg.no_grad():
    ...     print(sg.is_grad_enabled())
    ...
    False
""",
    'Function': """
    >>> import symgrad as sg
    >>> class Cube(sg.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x ** 3
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return grad * 3 * x ** 2
    ...
    >>> print(sg.grad_fn(lambda x: Cube.apply(x)))
    df/dx = 3*x**2
    >>> Cube.apply(2.0)
    8.0
""",
    'print_graph': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.print_graph(sg.sin(x) * x)
    <MulBackward0 object>
        <SinBackward0 object>
            <AccumulateGrad object>  x
        <AccumulateGrad object>  x
""",
    'to_dot': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> print(sg.to_dot(sg.exp(x)))
    digraph backward {
      node [shape=box, fontname="monospace"];
      n0 [label="ExpBackward0", style=filled, fillcolor=darkolivegreen1];
      n1 [label="x", style=filled, fillcolor=lightblue];
      n1 -> n0;
    }
""",
    'FunctionError': """
    >>> import symgrad as sg
    >>> issubclass(sg.FunctionError, sg.SymgradError)
    True
""",
    'MissingDependencyError': """
    >>> import symgrad as sg
    >>> issubclass(sg.MissingDependencyError, ImportError)
    True
""",
    'abs': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.abs(x)
    Tensor(Abs(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.abs(x)))
    df/dx = sign(x)
""",
    'acos': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.acos(x)
    Tensor(acos(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.acos(x)))
    df/dx = -1/sqrt(1 - x**2)
""",
    'asin': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.asin(x)
    Tensor(asin(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.asin(x)))
    df/dx = 1/sqrt(1 - x**2)
""",
    'atan': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.atan(x)
    Tensor(atan(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.atan(x)))
    df/dx = 1/(x**2 + 1)
""",
    'cos': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.cos(x)
    Tensor(cos(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.cos(x)))
    df/dx = -sin(x)
""",
    'cosh': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.cosh(x)
    Tensor(cosh(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.cosh(x)))
    df/dx = sinh(x)
""",
    'erf': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.erf(x)
    Tensor(erf(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.erf(x)))
    df/dx = 2*exp(-x**2)/sqrt(pi)
""",
    'exp': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.exp(x)
    Tensor(exp(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.exp(x)))
    df/dx = exp(x)
""",
    'expm1': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.expm1(x)
    Tensor(expm1(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.expm1(x)))
    df/dx = expm1(x) + 1
""",
    'log': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.log(x)
    Tensor(log(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.log(x)))
    df/dx = 1/x
""",
    'log1p': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.log1p(x)
    Tensor(log1p(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.log1p(x)))
    df/dx = 1/(x + 1)
""",
    'neg': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.neg(x)
    Tensor(-x, shape=())
    >>> print(sg.grad_fn(lambda x: sg.neg(x)))
    df/dx = -1
""",
    'relu': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.relu(x)
    Tensor(relu(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.relu(x)))
    df/dx = float(x > 0)
""",
    'sigmoid': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sigmoid(x)
    Tensor(sigmoid(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sigmoid(x)))
    df/dx = (1 - sigmoid(x))*sigmoid(x)
""",
    'sign': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sign(x)
    Tensor(sign(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sign(x)))
    df/dx = 0
""",
    'sin': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sin(x)
    Tensor(sin(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sin(x)))
    df/dx = cos(x)
""",
    'sinh': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sinh(x)
    Tensor(sinh(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sinh(x)))
    df/dx = cosh(x)
""",
    'softplus': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.softplus(x)
    Tensor(softplus(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.softplus(x)))
    df/dx = sigmoid(x)
""",
    'sqrt': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sqrt(x)
    Tensor(sqrt(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sqrt(x)))
    df/dx = 1/(2*sqrt(x))
""",
    'square': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.square(x)
    Tensor(x**2, shape=())
    >>> print(sg.grad_fn(lambda x: sg.square(x)))
    df/dx = 2*x
""",
    'tan': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.tan(x)
    Tensor(tan(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.tan(x)))
    df/dx = tan(x)**2 + 1
""",
    'tanh': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.tanh(x)
    Tensor(tanh(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.tanh(x)))
    df/dx = 1 - tanh(x)**2
""",
    'add': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.add(x, y)
    Tensor(x + y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.add(x, y)))
    df/dx = 1
    df/dy = 1
""",
    'sub': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.sub(x, y)
    Tensor(x - y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.sub(x, y)))
    df/dx = 1
    df/dy = -1
""",
    'mul': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.mul(x, y)
    Tensor(x*y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.mul(x, y)))
    df/dx = y
    df/dy = x
""",
    'div': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.div(x, y)
    Tensor(x/y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.div(x, y)))
    df/dx = 1/y
    df/dy = -x/y**2
""",
    'pow': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.pow(x, y)
    Tensor(x**y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.pow(x, y)))
    df/dx = where(Eq(y, 0), 0, x**(y - 1)*y)
    df/dy = where(Eq(x, 0) & (y >= 0), 0, x**y*log(x))
""",
    'atan2': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.atan2(x, y)
    Tensor(atan2(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.atan2(x, y)))
    df/dx = where(Eq(t1, 0), 0, y/t2)
    df/dy = where(Eq(t1, 0), 0, -x/t2)
      where
        t1 = x**2 + y**2
        t2 = where(Eq(t1, 0), 1, t1)
""",
    'hypot': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.hypot(x, y)
    Tensor(hypot(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.hypot(x, y)))
    df/dx = x/hypot(x, y)
    df/dy = y/hypot(x, y)
""",
    'logaddexp': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.logaddexp(x, y)
    Tensor(logaddexp(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.logaddexp(x, y)))
    df/dx = sigmoid(x - y)
    df/dy = sigmoid(-x + y)
""",
    'maximum': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.maximum(x, y)
    Tensor(Max(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.maximum(x, y)))
    df/dx = where(x < y, 0, t1)
    df/dy = where(x > y, 0, t1)
      where
        t1 = where(Eq(x, y), 1/2, 1)
""",
    'minimum': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.minimum(x, y)
    Tensor(Min(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.minimum(x, y)))
    df/dx = where(x > y, 0, t1)
    df/dy = where(x < y, 0, t1)
      where
        t1 = where(Eq(x, y), 1/2, 1)
""",
    'eq': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.eq(x, y)
    Tensor(Eq(x, y), shape=())
    >>> bool(sg.eq(2.0, 1.0))
    False
""",
    'ne': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.ne(x, y)
    Tensor(Ne(x, y), shape=())
    >>> bool(sg.ne(2.0, 1.0))
    True
""",
    'gt': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.gt(x, y)
    Tensor(x > y, shape=())
    >>> bool(sg.gt(2.0, 1.0))
    True
""",
    'ge': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.ge(x, y)
    Tensor(x >= y, shape=())
    >>> bool(sg.ge(2.0, 1.0))
    True
""",
    'lt': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.lt(x, y)
    Tensor(x < y, shape=())
    >>> bool(sg.lt(2.0, 1.0))
    False
""",
    'le': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.le(x, y)
    Tensor(x <= y, shape=())
    >>> bool(sg.le(2.0, 1.0))
    False
""",
    'isnan': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.isnan(np.array([1.0, np.nan]))
    array([False,  True])
    >>> print(sg.grad_fn(lambda x: sg.where(sg.isnan(x), 0.0, x)))
    df/dx = float(~(isnan(x)))
""",
    'logical_and': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.logical_and(x > 0, y > 0)
    Tensor((x > 0) & (y > 0), shape=())
""",
    'logical_or': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.logical_or(x > 0, y > 0)
    Tensor((x > 0) | (y > 0), shape=())
""",
    'logical_not': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.logical_not(x > 0)
    Tensor(x <= 0, shape=())
""",
    'cast': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.cast(x > 0)
    Tensor(float(x > 0), shape=())
    >>> print(sg.grad_fn(lambda x: x * sg.cast(x > 0)))
    df/dx = float(x > 0)
""",
    'where': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> print(sg.grad_fn(lambda x: sg.where(x > 0, x, 0.1 * x)))
    df/dx = 0.1*float(x <= 0) + float(x > 0)
""",
    'clamp': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.clamp(x, 0, 1)
    Tensor(clamp(x, min=0.0, max=1.0), shape=())
    >>> float(sg.clamp(1.5, 0, 1))
    1.0
""",
    'detach': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> print(sg.grad_fn(lambda x: x * sg.detach(x)))
    df/dx = detach(x)
""",
    'stop_gradient': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> print(sg.grad_fn(lambda x: x * sg.stop_gradient(x)))
    df/dx = detach(x)
""",
    'reshape': """
    >>> import symgrad as sg
    >>> v = sg.symbol("v", shape=("n",))
    >>> sg.reshape(v, (1, "n")).shape
    (1, n)
""",
    'squeeze': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x", shape=(1, "n"))
    >>> sg.squeeze(x, 0).shape
    (n,)
""",
    'unsqueeze': """
    >>> import symgrad as sg
    >>> v = sg.symbol("v", shape=("n",))
    >>> sg.unsqueeze(v, 0).shape
    (1, n)
""",
    'transpose': """
    >>> import symgrad as sg
    >>> W = sg.symbol("W", shape=("m", "n"))
    >>> sg.transpose(W).shape
    (n, m)
""",
    'broadcast_to': """
    >>> import symgrad as sg
    >>> v = sg.symbol("v", shape=("n",))
    >>> sg.broadcast_to(v, (3, "n")).shape
    (3, n)
""",
    'flip': """
    >>> import symgrad as sg
    >>> v = sg.symbol("v", shape=("n",))
    >>> sg.flip(v, 0)
    Tensor(flip(v, axis=0), shape=(n,))
    >>> print(sg.grad_fn(lambda v: sg.sum(sg.flip(v, 0) * v), shapes={"v": ("n",)}))
    df/dv = 2 flip(v, axis=(0,))    [shape (n,)]
""",
    'matmul': """
    >>> import symgrad as sg
    >>> W = sg.symbol("W", shape=("m", "n"))
    >>> v = sg.symbol("v", shape=("n",))
    >>> sg.matmul(W, v).shape
    (m,)
    >>> print(sg.grad_fn(lambda W, v: sg.sum(sg.matmul(W, v)), shapes={"W": ("m", "n"), "v": ("n",)}))
    df/dW = 𝟙 vᵀ    [shape (m, n)]
    df/dv = Wᵀ 𝟙    [shape (n,)]
""",
    'dot': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda u, v: sg.dot(u, v), shapes={"u": ("n",), "v": ("n",)}))
    df/du = v    [shape (n,)]
    df/dv = u    [shape (n,)]
""",
    'outer': """
    >>> import symgrad as sg
    >>> u, v = sg.symbol("u", shape=("m",)), sg.symbol("v", shape=("n",))
    >>> sg.outer(u, v).shape
    (m, n)
""",
    'trace': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda A: sg.trace(A), shapes={"A": ("n", "n")}))
    df/dA = I    [shape (n, n)]
""",
    'diagonal': """
    >>> import symgrad as sg
    >>> A = sg.symbol("A", shape=("n", "n"))
    >>> sg.diagonal(A).shape
    (n,)
""",
    'diag': """
    >>> import symgrad as sg
    >>> v = sg.symbol("v", shape=("n",))
    >>> sg.diag(v).shape
    (n, n)
""",
    'eye': """
    >>> import symgrad as sg
    >>> sg.eye(3).shape
    (3, 3)
    >>> sg.eye("n").shape
    (n, n)
""",
    'inverse': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda A: sg.sum(sg.inverse(A)), shapes={"A": ("n", "n")}))
    df/dA = −A⁻ᵀ 𝟙 𝟙ᵀ A⁻ᵀ    [shape (n, n)]
""",
    'inv': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.inv(np.array([[2.0, 0.0], [0.0, 4.0]]))
    array([[0.5 , 0.  ],
           [0.  , 0.25]])
""",
    'det': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda A: sg.det(A), shapes={"A": ("n", "n")}))
    df/dA = det(A) A⁻ᵀ    [shape (n, n)]
""",
    'logdet': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda A: sg.logdet(A), shapes={"A": ("n", "n")}))
    df/dA = A⁻ᵀ    [shape (n, n)]
""",
    'logabsdet': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda A: sg.logabsdet(A), shapes={"A": ("n", "n")}))
    df/dA = A⁻ᵀ    [shape (n, n)]
""",
    'slogdet': """
    >>> import symgrad as sg
    >>> A = sg.symbol("A", shape=("n", "n"))
    >>> sign, logabs = sg.slogdet(A)
    >>> logabs.shape
    ()
""",
    'solve': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda A, b: sg.sum(sg.solve(A, b)), shapes={"A": ("n", "n"), "b": ("n",)}))
    df/dA = −A⁻ᵀ 𝟙 bᵀ A⁻ᵀ    [shape (n, n)]
    df/db = A⁻ᵀ 𝟙    [shape (n,)]
""",
    'cholesky': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.cholesky(np.array([[4.0, 2.0], [2.0, 2.0]]))
    array([[2., 0.],
           [1., 1.]])
""",
    'norm': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> float(sg.norm(np.array([3.0, 4.0])))
    5.0
    >>> sg.jacobian(lambda v: sg.norm(v), np.array([3.0, 4.0]))
    array([0.6, 0.8])
""",
    'tril': """
    >>> import symgrad as sg
    >>> A = sg.symbol("A", shape=("n", "n"))
    >>> sg.tril(A).shape
    (n, n)
    >>> import numpy as np
    >>> sg.tril(np.ones((2, 2)))
    array([[1., 0.],
           [1., 1.]])
""",
    'triu': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.triu(np.ones((2, 2)), k=1)
    array([[0., 1.],
           [0., 0.]])
""",
    'sum': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda v: sg.sum(v ** 2), shapes={"v": ("n",)}))
    df/dv = 2 v    [shape (n,)]
""",
    'mean': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda v: sg.mean(v), shapes={"v": ("n",)}))
    df/dv = (1/n) 𝟙    [shape (n,)]
""",
    'prod': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> float(sg.prod(np.array([1.0, 2.0, 3.0])))
    6.0
    >>> sg.jacobian(lambda v: sg.prod(v), np.array([1.0, 2.0, 3.0]))
    array([6., 3., 2.])
""",
    'amax': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.amax(np.array([[1.0, 5.0], [3.0, 2.0]]), axis=0)
    array([3., 5.])
""",
    'amin': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.amin(np.array([[1.0, 5.0], [3.0, 2.0]]), axis=1)
    array([1., 2.])
""",
    'max': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> float(sg.max(np.array([1.0, 5.0, 3.0])))
    5.0
    >>> sg.jacobian(lambda v: sg.max(v), np.array([1.0, 5.0, 3.0]))
    array([0., 1., 0.])
""",
    'min': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> float(sg.min(np.array([1.0, 5.0, 3.0])))
    1.0
    >>> sg.jacobian(lambda v: sg.min(v), np.array([1.0, 5.0, 3.0]))
    array([1., 0., 0.])
""",
    'std': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> float(sg.std(np.array([1.0, 2.0, 3.0])))
    1.0
    >>> float(sg.std(np.array([1.0, 2.0, 3.0]), correction=0))
    0.816496580927726
""",
    'var': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> float(sg.var(np.array([1.0, 2.0, 3.0])))
    1.0
    >>> print(sg.grad_fn(lambda v: sg.var(v), shapes={"v": ("n",)}))
    df/dv = 2 (v − 𝟙ᵀ v/n)/(n - 1)    [shape (n,)]
""",
    'cumsum': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.cumsum(np.array([1.0, 2.0, 3.0]), 0)
    array([1., 3., 6.])
""",
    'softmax': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.softmax(np.array([0.0, np.log(3.0)]))
    array([0.25, 0.75])
    >>> v = sg.symbol("v", shape=("n",))
    >>> sg.softmax(v).shape
    (n,)
""",
    'log_softmax': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.log_softmax(np.array([0.0, 0.0]))
    array([-0.69314718, -0.69314718])
""",
    'logsumexp': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> float(sg.logsumexp(np.array([0.0, 0.0])))
    0.6931471805599453
    >>> print(sg.grad_fn(lambda v: sg.logsumexp(v), shapes={"v": ("n",)}))
    df/dv = exp(v − logsumexp(v))    [shape (n,)]
""",
    'mse_loss': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda p, y: sg.mse_loss(p, y), shapes={"p": ("n",), "y": ("n",)}, wrt="p"))
    df/dp = (2/n) (p − y)    [shape (n,)]
""",
    'binary_cross_entropy_with_logits': """
    >>> import symgrad as sg
    >>> print(sg.grad_fn(lambda z, y: sg.binary_cross_entropy_with_logits(z, y), shapes={"z": ("n",), "y": ("n",)}, wrt="z"))
    df/dz = (1/n) (σ(z) − y)    [shape (n,)]
""",
    'cross_entropy': """
    >>> import symgrad as sg
    >>> labels = sg.TensorSpec(("B",), dtype="int64")
    >>> g = sg.grad_fn(lambda z, t: sg.cross_entropy(z, t), shapes={"z": ("B", "C"), "t": labels})
    >>> import numpy as np
    >>> g.compile()(np.zeros((2, 4)), np.array([0, 3]))[0]
    array([[-0.375,  0.125,  0.125,  0.125],
           [ 0.125,  0.125,  0.125, -0.375]])
""",
    'one_hot': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.one_hot(np.array([2, 0]), 3)
    array([[0., 0., 1.],
           [1., 0., 0.]])
""",
    'cat': """
    >>> import symgrad as sg
    >>> u, v = sg.symbol("u", shape=("m",)), sg.symbol("v", shape=("n",))
    >>> sg.cat([u, v]).shape
    (m + n,)
""",
    'concatenate': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.concatenate([np.ones(2), np.zeros(1)])
    array([1., 1., 0.])
""",
    'stack': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.stack([x, y]).shape
    (2,)
    >>> import numpy as np
    >>> sg.stack([np.ones(2), np.zeros(2)])
    array([[1., 1.],
           [0., 0.]])
""",
    'take': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.take(np.array([10.0, 20.0, 30.0]), np.array([2, 0, 2]))
    array([30., 10., 30.])
""",
    'take_add': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.take_add(np.array([1.0, 1.0, 1.0]), np.array([2, 0, 2]), size=3)
    array([1., 0., 2.])
""",
    'take_along': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.take_along(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1], [0]]), 1)
    array([[2.],
           [3.]])
""",
    'put_along_add': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.put_along_add(np.array([[5.0], [7.0]]), np.array([[1], [0]]), 1, (2, 2))
    array([[0., 5.],
           [7., 0.]])
""",
    'conv': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x", shape=(1, 3, 8, 8))
    >>> w = sg.symbol("w", shape=(4, 3, 3, 3))
    >>> sg.conv(x, w, padding=1).shape
    (1, 4, 8, 8)
""",
    'conv_transpose': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x", shape=(1, 4, 8, 8))
    >>> w = sg.symbol("w", shape=(4, 3, 3, 3))
    >>> sg.conv_transpose(x, w, stride=2).shape
    (1, 3, 17, 17)
""",
    'conv_weight': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x", shape=(1, 3, 8, 8))
    >>> g = sg.symbol("g", shape=(1, 4, 6, 6))
    >>> sg.conv_weight(x, g, (4, 3, 3, 3)).shape
    (4, 3, 3, 3)
""",
    'unfold': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x", shape=(1, 2, 4, 4))
    >>> sg.unfold(x, 2, stride=2).shape
    (1, 8, 4)
""",
    'fold': """
    >>> import symgrad as sg
    >>> c = sg.symbol("c", shape=(1, 8, 4))
    >>> sg.fold(c, (4, 4), 2, stride=2).shape
    (1, 2, 4, 4)
""",
}


def _attach(obj: Any, example: str) -> None:
    doc = (obj.__doc__ or "").rstrip()
    if ">>>" in doc:
        return
    obj.__doc__ = f"{doc}\n\nExample:\n\n{example.rstrip()}\n"


def attach_examples(namespace: dict[str, Any]) -> None:
    """Append each example to the docstring of the object of that name in ``namespace``
    (the package's globals); ``sg.rules`` is an instance, so its class gets it."""
    for name, example in EXAMPLES.items():
        obj = namespace[name]
        _attach(obj if isinstance(obj, type) or callable(obj) else type(obj), example)
