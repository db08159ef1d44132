"""Examples of the public classes and functions defined below the package's face (the
traced ``Tensor``, ``TensorSpec``, the rules, gradient modes, ``sg.Function``, the graph
printers) and of the torch.func-style transforms."""

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
    'vjp': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> out, vjp_fn = sg.vjp(lambda x: sg.sin(x) * 2, np.array([0.0, 1.0]))
    >>> vjp_fn(np.array([1.0, 1.0]))
    (array([2.        , 1.08060461]),)
""",
    'jvp': """
    >>> import symgrad as sg
    >>> out, tangent = sg.jvp(lambda x: x ** 3, (2.0,), (1.0,))
    >>> out, tangent
    (8.0, 12.0)
""",
    'jacobian': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.jacobian(lambda x: x ** 2, np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    >>> J = sg.jacobian(lambda x: sg.exp(x), shapes={"x": ("n",)})
    >>> print(J)
    df/dx = diag(exp(x))    [shape (n, n)]
""",
    'hessian': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.hessian(lambda x: sg.sum(x ** 3), np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    >>> print(sg.hessian(lambda x: x ** 3 * sg.exp(x)))
    d²f/dx² = t1*x**2 + 2*t1*x + x**3*exp(x) + 3*x**2*exp(x)
      where
        t1 = 3*exp(x)
""",
    'hvp': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.hvp(lambda x: sg.sum(x ** 3), np.array([1.0, 2.0]), np.array([1.0, 0.0]))
    (array(9.), array([6., 0.]))
""",
    'Jacobian': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> J = sg.Jacobian(lambda x, y: x * y, shapes={"x": (2,), "y": (2,)}, wrt="x")
    >>> J(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    array([[3., 0.],
           [0., 4.]])
""",
    'Hessian': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> H = sg.Hessian(lambda x, y: x ** 2 * y)
    >>> print(H)
    d²f/dx² = 2*y
    d²f/dxdy = 2*x
    d²f/dydx = 2*x
    d²f/dy² = 0
    >>> H(1.0, 2.0)
    ((4.0, 2.0), (2.0, 0.0))
""",
}
