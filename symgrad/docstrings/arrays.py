"""Examples of the array ops: shapes, linear algebra, reductions, neural-network ops,
indexing and convolutions (``core/ops/``), on symbols with named dims or on NumPy
arrays."""

EXAMPLES = {
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
    df/dv = 2 flip(v, axis=0)    [shape (n,)]
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
    df/dA = −A⁻ᵀ 𝟙𝟙ᵀ A⁻ᵀ    [shape (n, n)]
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
    df/dv = (2/(n − 1)) (v − ((𝟙ᵀ v)/n) 𝟙)    [shape (n,)]
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
    df/dv = softmax(v)    [shape (n,)]
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
