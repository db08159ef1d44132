"""The benchmark problems of bench/run.py and bench/mlp.py, written once per peer.

Every problem is a scalar function of some inputs; the gradient is taken with respect to
``WRT[problem]`` (the parameters; data such as X and Y are inputs but not differentiated).

    chain       f(x, y) = x_K,  x_0 = x,  x_{k+1} = sin(x_k)*x_k + cos(y)*x_k   (bench/scaling.py)
    rosenbrock  f(x) = sum(100*(x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2),  x of length n
    mlp         f(W1, b1, W2, b2, X, Y) = mean((tanh(X@W1 + b1)@W2 + b2 - Y)**2)
    logreg      f(w, b, X, y) = mean(softplus(X@w + b) - y*(X@w + b)) + lam/2*sum(w*w)
    attention   f(Q, K, V, G) = sum(softmax(Q@K.T/sqrt(d), rows)@V * G)

Each ``build_<peer>(problem, params, inputs)`` returns a ``Cell``: the derive time (None if
the peer derives nothing), a no-argument ``call`` that computes the gradient once from inputs
already converted to the peer's native types, ``to_numpy`` that turns call's result into a list
of float64 arrays in WRT order, op counts (text or None) and a note. Imports of the peer
libraries happen inside the builders, so a cell process loads only the library it measures.
"""
import math
import time

import numpy as np

PROBLEMS = ("seed_simple", "seed_module", "chain", "rosenbrock", "mlp", "logreg", "attention")

WRT = {
    "seed_simple": ("a", "b"),
    "seed_module": ("a", "b", "c"),
    "chain": ("x", "y"),
    "rosenbrock": ("x",),
    "mlp": ("W1", "b1", "W2", "b2"),
    "logreg": ("w", "b"),
    "attention": ("Q", "K", "V"),
}

# sizes per problem: (label, params); quick is the --quick subset
SIZES = {
    "seed_simple": [("n=4", {"n": 4})],
    "seed_module": [(f"n=r=m={n}", {"n": n}) for n in (8, 256)],
    "chain": [(f"K={K}", {"K": K}) for K in (10, 40, 100, 160, 1000, 10000)],
    "rosenbrock": [(f"n={n:g}" if n < 1000 else f"n=1e{round(math.log10(n))}", {"n": n})
                   for n in (10, 1000, 100000)],
    "mlp": [("16/16/16 b8", {"d": 16, "h": 16, "o": 16, "B": 8}),
            ("256/256/10 b128", {"d": 256, "h": 256, "o": 10, "B": 128})],
    "logreg": [("N=1000 d=50", {"N": 1000, "d": 50, "lam": 1e-2})],
    "attention": [("seq=64 d=32", {"s": 64, "d": 32})],
}
QUICK = {"seed_simple": ["n=4"], "seed_module": ["n=r=m=8"], "chain": ["K=10", "K=100"], "rosenbrock": ["n=10", "n=1e3"], "mlp": ["16/16/16 b8"],
         "logreg": ["N=1000 d=50"], "attention": ["seq=64 d=32"]}

# symbolic dims symgrad is given (the compiled code binds them from the arguments' shapes)
SG_SHAPES = {
    "seed_simple": {"a": ("n",), "b": ("n",)},
    "seed_module": {"a": ("r", "n"), "b": ("m", "r"), "c": ("m",), "x": ("n",)},
    "chain": {},
    "rosenbrock": {"x": ("n",)},
    "mlp": {"W1": ("d", "h"), "b1": ("h",), "W2": ("h", "o"), "b2": ("o",),
            "X": ("B", "d"), "Y": ("B", "o")},
    "logreg": {"w": ("d",), "b": (), "X": ("N", "d"), "y": ("N",)},
    "attention": {"Q": ("s", "d"), "K": ("s", "d"), "V": ("s", "d"), "G": ("s", "d")},
}


def work(problem, p):
    """Rough count of scalar operations in the forward pass (for caps and extrapolation)."""
    if problem == "seed_simple":
        return 3 * p["n"]
    if problem == "seed_module":
        return 4 * p["n"] ** 2
    if problem == "chain":
        return 4 * p["K"]
    if problem == "rosenbrock":
        return 8 * p["n"]
    if problem == "mlp":
        return 2 * p["B"] * (p["d"] * p["h"] + p["h"] * p["o"]) + 3 * p["B"] * (p["h"] + p["o"])
    if problem == "logreg":
        return 2 * p["N"] * p["d"] + 5 * p["N"] + 2 * p["d"]
    if problem == "attention":
        return 4 * p["s"] ** 2 * p["d"] + 5 * p["s"] ** 2
    raise KeyError(problem)


def make_inputs(problem, p, seed=0):
    """{name: float64 ndarray} in the function's argument order (0-d arrays for scalars)."""
    rng = np.random.default_rng(seed)
    if problem == "seed_simple":
        return {"a": rng.random(p["n"]), "b": rng.random(p["n"])}
    if problem == "seed_module":
        n = p["n"]
        return {"a": rng.standard_normal((n, n)), "b": rng.standard_normal((n, n)),
                "c": rng.standard_normal(n), "x": rng.standard_normal(n)}
    if problem == "chain":
        # (1.0, 1.2) is in the basin of an attracting fixed point: finite for every K
        return {"x": np.array(1.0), "y": np.array(1.2)}
    if problem == "rosenbrock":
        return {"x": rng.uniform(-1.2, 1.2, p["n"])}
    if problem == "mlp":
        d, h, o, B = p["d"], p["h"], p["o"], p["B"]
        return {"W1": rng.standard_normal((d, h)) / math.sqrt(d),
                "b1": 0.1 * rng.standard_normal(h),
                "W2": rng.standard_normal((h, o)) / math.sqrt(h),
                "b2": 0.1 * rng.standard_normal(o),
                "X": rng.standard_normal((B, d)),
                "Y": rng.standard_normal((B, o))}
    if problem == "logreg":
        N, d = p["N"], p["d"]
        X = rng.standard_normal((N, d))
        w_true = rng.standard_normal(d) / math.sqrt(d)
        y = (rng.uniform(size=N) < 1 / (1 + np.exp(-X @ w_true))).astype(np.float64)
        return {"w": 0.1 * rng.standard_normal(d), "b": np.array(0.1), "X": X, "y": y}
    if problem == "attention":
        s, d = p["s"], p["d"]
        return {k: rng.standard_normal((s, d)) for k in ("Q", "K", "V", "G")}
    raise KeyError(problem)


class Cell:
    def __init__(self, call, to_numpy, derive=None, ops=None, note="", version=""):
        self.call, self.to_numpy, self.derive = call, to_numpy, derive
        self.ops, self.note, self.version = ops, note, version


def _timed(build):
    """Run build() -> (call, extra...) and time it up to and including the first call."""
    t0 = time.perf_counter()
    out = build()
    call = out[0]
    first = call()
    return time.perf_counter() - t0, first, out


# =====================================================================================
# Array-library formulation shared by torch, JAX, PyTensor and symgrad
# =====================================================================================

class NS:
    """The few ops the problems need, for one array library."""

    def __init__(self, **ops):
        self.__dict__.update(ops)


def forward(problem, p, ns, args):
    """The loss, written once with the ops in ``ns`` (args in argument order)."""
    if problem == "seed_simple":
        a, b = args
        return ns.sum((a + b) * b)
    if problem == "seed_module":
        a, b, c, x = args
        return ns.sum(b @ a @ x + c)
    if problem == "chain":
        x, y = args
        for _ in range(p["K"]):
            x = ns.sin(x) * x + ns.cos(y) * x
        return x
    if problem == "rosenbrock":
        (x,) = args
        a = x[:-1]
        return ns.sum(100.0 * (x[1:] - a ** 2) ** 2 + (1.0 - a) ** 2)
    if problem == "mlp":
        W1, b1, W2, b2, X, Y = args
        H = ns.tanh(X @ W1 + b1)
        O = H @ W2 + b2
        return ns.mean((O - Y) ** 2)
    if problem == "logreg":
        w, b, X, y = args
        z = X @ w + b
        return ns.mean(ns.softplus(z) - y * z) + (0.5 * p["lam"]) * ns.sum(w * w)
    if problem == "attention":
        Q, K, V, G = args
        S = (Q @ ns.T(K)) * (1.0 / math.sqrt(p["d"]))
        return ns.sum((ns.softmax_rows(S) @ V) * G)
    raise KeyError(problem)


def check_work(problem, p, grads, inputs):
    """Turn a list of gradient arrays into float64 arrays shaped like the WRT inputs."""
    return [np.asarray(g, dtype=np.float64).reshape(np.shape(inputs[k]))
            for g, k in zip(grads, WRT[problem])]


# ----- torch eager ---------------------------------------------------------------------

def torch_ns():
    import torch
    F = torch.nn.functional
    return NS(sin=torch.sin, cos=torch.cos, tanh=torch.tanh, exp=torch.exp,
              softplus=F.softplus, sum=torch.sum, mean=torch.mean, T=lambda a: a.T,
              softmax_rows=lambda S: torch.softmax(S, dim=-1))


def build_torch(problem, p, inputs):
    import torch
    torch.set_num_threads(1)
    ns = torch_ns()
    wrt = WRT[problem]
    ts = {k: torch.tensor(v, dtype=torch.float64, requires_grad=k in wrt)
          for k, v in inputs.items()}
    args = list(ts.values())
    params = [ts[k] for k in wrt]

    def call():
        return torch.autograd.grad(forward(problem, p, ns, args), params)

    return Cell(call, lambda r: [t.detach().numpy() for t in r], derive=None,
                note="forward + autograd.grad each call", version=torch.__version__)


# ----- JAX -----------------------------------------------------------------------------

def build_jax(problem, p, inputs):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    ns = NS(sin=jnp.sin, cos=jnp.cos, tanh=jnp.tanh, exp=jnp.exp, softplus=jax.nn.softplus,
            sum=jnp.sum, mean=jnp.mean, T=lambda a: a.T,
            softmax_rows=lambda S: jax.nn.softmax(S, axis=-1))
    names = list(inputs)
    argnums = tuple(names.index(k) for k in WRT[problem])

    def f(*args):
        return forward(problem, p, ns, args)

    args = [jax.device_put(jnp.asarray(v, dtype=jnp.float64)) for v in inputs.values()]
    grad = jax.grad(f, argnums=argnums)

    def build():
        jg = jax.jit(grad)
        return (lambda: jax.block_until_ready(jg(*args)),)

    derive, _, (call,) = _timed(build)
    try:
        nf = len(jax.make_jaxpr(f)(*args).eqns)
        ng = len(jax.make_jaxpr(grad)(*args).eqns)
        ops = f"{nf}/{ng}"
    except Exception:  # noqa: BLE001 - op counts are optional
        ops = None
    return Cell(call, lambda r: [np.asarray(t) for t in r], derive=derive, ops=ops,
                note="derive = trace + XLA compile (first call)", version=jax.__version__)


# ----- PyTensor ------------------------------------------------------------------------

def build_pytensor(problem, p, inputs):
    import pytensor
    import pytensor.tensor as pt
    from pytensor.tensor.special import softmax
    ns = NS(sin=pt.sin, cos=pt.cos, tanh=pt.tanh, exp=pt.exp, softplus=pt.softplus,
            sum=pt.sum, mean=pt.mean, T=lambda a: a.T,
            softmax_rows=lambda S: softmax(S, axis=-1))
    names = list(inputs)
    args = [v if v.ndim else np.float64(v) for v in inputs.values()]
    note = "default mode (Numba)"

    def build(mode=None):
        syms = [pt.tensor(k, dtype="float64", shape=(None,) * np.ndim(v))
                for k, v in inputs.items()]
        loss = forward(problem, p, ns, syms)
        wrt = [syms[names.index(k)] for k in WRT[problem]]
        grads = pytensor.grad(loss, wrt)
        fn = pytensor.function(syms, grads, mode=mode)
        return (lambda: fn(*args), fn)

    try:
        derive, _, (call, fn) = _timed(build)
    except Exception as e:  # noqa: BLE001 - fall back to the C backend and say so
        note = f"Numba mode failed ({type(e).__name__}); FAST_RUN (C) mode"
        derive, _, (call, fn) = _timed(lambda: build("FAST_RUN"))
    ops = f"-/{len(fn.maker.fgraph.apply_nodes)}"
    return Cell(call, lambda r: list(r), derive=derive, ops=ops,
                note=note + "; derive = graph + grad + compile + first call",
                version=pytensor.__version__)


# ----- symgrad -------------------------------------------------------------------------

SG_NOTES = []


def sg_ns():
    import symgrad as sg

    def softmax_rows(S):
        fn = getattr(sg, "softmax", None)
        if fn is not None:
            for call in (lambda: fn(S, axis=-1), lambda: fn(S, -1), lambda: fn(S)):
                try:
                    out = call()
                    SG_NOTES.append("sg.softmax")
                    return out
                except TypeError:
                    pass
        amax = getattr(sg, "amax", None) or getattr(sg, "max", None)
        if amax is not None:
            S = S - sg.detach(amax(S, axis=1, keepdims=True))
            SG_NOTES.append("softmax = exp(S - detach(amax))/sum")
        else:
            SG_NOTES.append("softmax = exp/sum, no max shift (no max op in this symgrad)")
        E = sg.exp(S)
        return E / sg.sum(E, axis=1, keepdims=True)

    return NS(sin=sg.sin, cos=sg.cos, tanh=sg.tanh, exp=sg.exp, softplus=sg.softplus,
              sum=sg.sum, mean=sg.mean, T=sg.transpose, softmax_rows=softmax_rows)


def sg_has_slicing():
    import symgrad as sg
    return hasattr(sg.Tensor, "__getitem__")


def sg_function(problem, p):
    """(f, shapes, wrt) for sg.grad_fn; rosenbrock without slicing support becomes
    f(u, v) with u = x[:-1], v = x[1:] (the wrapper adds the two gradients)."""
    ns = sg_ns()
    names = list(SG_SHAPES[problem]) or list(WRT[problem])
    if problem == "rosenbrock" and not sg_has_slicing():
        def rosenbrock_split(u, v):
            return ns.sum(100.0 * (v - u ** 2) ** 2 + (1.0 - u) ** 2)
        return rosenbrock_split, {"u": ("m",), "v": ("m",)}, None

    def f(*args):
        return forward(problem, p, ns, args)

    # grad_fn reads the parameter names from the signature
    src = f"def {problem}({', '.join(names)}):\n    return _f({', '.join(names)})\n"
    scope = {"_f": f}
    exec(src, scope)  # noqa: S102 - a named-parameter wrapper around f
    return scope[problem], SG_SHAPES[problem] or None, list(WRT[problem])


def sg_convert(backend):
    """An input array as symgrad's ``backend`` takes it: torch tensors for torch, jax arrays
    for jax, NumPy arrays for the others (numpy, c, numba)."""
    if backend == "torch":
        import torch
        torch.set_num_threads(1)
        return lambda v: torch.tensor(v, dtype=torch.float64)
    if backend == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        return lambda v: jax.device_put(jnp.asarray(v, dtype=jnp.float64))
    return lambda v: v


def sg_numpy(t):
    if hasattr(t, "detach"):
        t = t.detach()
    return np.asarray(t, dtype=np.float64)


def build_symgrad(problem, p, inputs, backend):
    import symgrad as sg
    note = []
    conv = sg_convert(backend)
    tonp = lambda r: [sg_numpy(t) for t in r]  # noqa: E731
    if problem == "chain":
        args = [float(v) for v in inputs.values()]
        note.append("scalar args as Python floats")
    else:
        args = [conv(v) for v in inputs.values()]
    holder = {}
    split = problem == "rosenbrock" and not sg_has_slicing()

    def build():
        f, shapes, wrt = sg_function(problem, p)
        g = sg.grad_fn(f, wrt=wrt, shapes=shapes)
        fn = g.compile(backend)
        holder["g"] = g
        if split:
            (x,) = args
            if backend == "torch":
                import torch

                def call():
                    gu, gv = fn(x[:-1], x[1:])
                    out = torch.zeros_like(x)
                    out[:-1] = gu
                    out[1:] += gv
                    return (out,)
            else:
                def call():
                    gu, gv = fn(x[:-1], x[1:])
                    out = np.zeros_like(x)
                    out[:-1] = gu
                    out[1:] += gv
                    return (out,)
            return (call,)
        return (lambda: fn(*args),)

    SG_NOTES.clear()
    derive, _, (call,) = _timed(build)
    note += SG_NOTES
    if split:
        note.append("no x[1:] in this symgrad: f(u, v), u=x[:-1], v=x[1:], "
                    "grads added in the (timed) wrapper")
    fwd, tot = holder["g"].op_counts()
    return Cell(call, tonp, derive=derive, ops=f"{fwd}/{tot}", note="; ".join(note),
                version=getattr(sg, "__version__", "?"))


# ----- CasADi --------------------------------------------------------------------------

def casadi_loss(problem, p, ca, sym):
    """Problem inputs as CasADi symbols (vectors are columns), the loss, and wrt symbols."""
    if problem == "seed_simple":
        a, b = sym("a", p["n"]), sym("b", p["n"])
        return [a, b], ca.sum1((a + b) * b)
    if problem == "seed_module":
        n = p["n"]
        a, b, c, x = sym("a", n, n), sym("b", n, n), sym("c", n), sym("x", n)
        return [a, b, c, x], ca.sum1(ca.mtimes(b, ca.mtimes(a, x)) + c)
    if problem == "chain":
        x, y = sym("x"), sym("y")
        syms = [x, y]
        for _ in range(p["K"]):
            x = ca.sin(x) * x + ca.cos(y) * x
        return syms, x
    if problem == "rosenbrock":
        x = sym("x", p["n"])
        a = x[:-1]
        return [x], ca.sum1(100 * (x[1:] - a ** 2) ** 2 + (1 - a) ** 2)
    if problem == "mlp":
        d, h, o, B = p["d"], p["h"], p["o"], p["B"]
        W1, b1, W2, b2 = sym("W1", d, h), sym("b1", h), sym("W2", h, o), sym("b2", o)
        X, Y = sym("X", B, d), sym("Y", B, o)
        H = ca.tanh(ca.mtimes(X, W1) + ca.repmat(b1.T, B, 1))
        O = ca.mtimes(H, W2) + ca.repmat(b2.T, B, 1)
        return [W1, b1, W2, b2, X, Y], ca.sum1(ca.sum2((O - Y) ** 2)) / (B * o)
    if problem == "logreg":
        N, d = p["N"], p["d"]
        w, b, X, y = sym("w", d), sym("b"), sym("X", N, d), sym("y", N)
        z = ca.mtimes(X, w) + b
        loss = ca.sum1(ca.log(1 + ca.exp(z)) - y * z) / N + 0.5 * p["lam"] * ca.sumsqr(w)
        return [w, b, X, y], loss
    if problem == "attention":
        s, d = p["s"], p["d"]
        Q, K, V, G = (sym(k, s, d) for k in "QKVG")
        E = ca.exp(ca.mtimes(Q, K.T) / math.sqrt(d))
        P = E / ca.repmat(ca.sum2(E), 1, s)
        return [Q, K, V, G], ca.sum1(ca.sum2(ca.mtimes(P, V) * G))
    raise KeyError(problem)


def build_casadi(problem, p, inputs, kind):
    import casadi as ca
    cls = ca.SX if kind == "SX" else ca.MX
    names = list(inputs)
    args = [float(v) if v.ndim == 0 else v for v in inputs.values()]

    def build():
        syms, loss = casadi_loss(problem, p, ca, cls.sym)
        wrt = [syms[names.index(k)] for k in WRT[problem]]
        fn = ca.Function("grad", syms, [ca.gradient(loss, v) for v in wrt])
        f0 = ca.Function("f", syms, [loss])
        return (lambda: fn(*args), fn, f0)

    derive, _, (call, fn, f0) = _timed(build)

    def tonp(r):
        r = r if isinstance(r, (tuple, list)) else (r,)
        return [np.array(t).reshape(np.shape(inputs[k])) for t, k in zip(r, WRT[problem])]

    note = "no max shift in softmax; " if problem == "attention" else ""
    return Cell(call, tonp, derive=derive, ops=f"{f0.n_instructions()}/{fn.n_instructions()}",
                note=note + "ops = VM instructions (scalar for SX)", version=ca.__version__)


# ----- SymPy ---------------------------------------------------------------------------

def sympy_loss(problem, p, sp, inputs):
    """Scalar symbols for every input element (nested lists for lambdify's arguments),
    the loss, and the flat list of wrt symbols."""
    def arr(name, shape):
        if not shape:
            return sp.Symbol(name, real=True)
        if len(shape) == 1:
            return [sp.Symbol(f"{name}_{i}", real=True) for i in range(shape[0])]
        return [[sp.Symbol(f"{name}_{i}_{j}", real=True) for j in range(shape[1])]
                for i in range(shape[0])]

    A = {k: arr(k, np.shape(v)) for k, v in inputs.items()}
    M = {k: sp.Matrix(v) if isinstance(v, list) else v for k, v in A.items()}
    if problem == "seed_simple":
        loss = sum((ai + bi) * bi for ai, bi in zip(A["a"], A["b"]))
    elif problem == "seed_module":
        loss = sum(M["b"] * M["a"] * M["x"] + M["c"])
    elif problem == "chain":
        x, y = A["x"], A["y"]
        for _ in range(p["K"]):
            x = sp.sin(x) * x + sp.cos(y) * x
        loss = x
    elif problem == "rosenbrock":
        x = A["x"]
        loss = sp.Add(*[100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
                        for i in range(len(x) - 1)])
    elif problem == "mlp":
        B, o = p["B"], p["o"]
        Z = M["X"] * M["W1"] + sp.ones(B, 1) * M["b1"].T
        O = Z.applyfunc(sp.tanh) * M["W2"] + sp.ones(B, 1) * M["b2"].T
        loss = sum((O - M["Y"]).applyfunc(lambda e: e ** 2)) / (B * o)
    elif problem == "logreg":
        z = M["X"] * M["w"] + sp.ones(p["N"], 1) * M["b"]
        loss = (sum(sp.log(1 + sp.exp(e)) - yy * e for e, yy in zip(z, M["y"])) / p["N"]
                + sp.Rational(1, 2) * sp.Float(p["lam"]) * sum(e ** 2 for e in M["w"]))
    elif problem == "attention":
        E = (M["Q"] * M["K"].T / sp.sqrt(p["d"])).applyfunc(sp.exp)
        rows = [E[i, :] / sum(E[i, :]) for i in range(E.rows)]
        P = sp.Matrix.vstack(*rows)
        loss = sum((P * M["V"]).multiply_elementwise(M["G"]))
    else:
        raise KeyError(problem)

    def flat(v):
        if isinstance(v, list):
            return [s for e in v for s in flat(e)]
        return [v]

    wrt = [s for k in WRT[problem] for s in flat(A[k])]
    return list(A.values()), loss, wrt


def build_sympy(problem, p, inputs):
    import sympy as sp
    args = [float(v) if v.ndim == 0 else v for v in inputs.values()]
    counts = {}

    def build():
        syms, loss, wrt = sympy_loss(problem, p, sp, inputs)
        grads = [sp.diff(loss, s) for s in wrt]
        fn = sp.lambdify(syms, grads, modules="math", cse=True)
        counts["n"] = len(wrt)
        return (lambda: fn(*args),)

    derive, _, (call,) = _timed(build)
    sizes = [int(np.size(inputs[k])) for k in WRT[problem]]

    def tonp(r):
        out, i = [], 0
        for n, k in zip(sizes, WRT[problem]):
            out.append(np.array(r[i:i + n], dtype=np.float64).reshape(np.shape(inputs[k])))
            i += n
        return out

    return Cell(call, tonp, derive=derive, ops=None,
                note="diff per scalar + lambdify(cse=True, math)", version=sp.__version__)


# =====================================================================================
# Hand-written gradients (NumPy; plain floats for the scalar chain)
# =====================================================================================

def hand_chain(K):
    sin, cos = math.sin, math.cos

    def grad(x, y):
        c = cos(y)
        xs = []
        for _ in range(K):
            xs.append(x)
            x = sin(x) * x + c * x
        gx, gc = 1.0, 0.0
        for xk in reversed(xs):
            gc += gx * xk
            gx *= cos(xk) * xk + sin(xk) + c
        return gx, -sin(y) * gc
    return grad


def hand_seed_simple(a, b):
    return b.copy(), a + 2.0 * b


def hand_seed_module(a, b, c, x):
    return np.outer(b.sum(axis=0), x), np.outer(np.ones(b.shape[0]), a @ x), np.ones_like(c)


def hand_rosenbrock(x):
    a = x[:-1]
    t = x[1:] - a * a
    g = np.empty_like(x)
    g[:-1] = -400.0 * a * t - 2.0 * (1.0 - a)
    g[-1] = 0.0
    g[1:] += 200.0 * t
    return (g,)


def hand_mlp(W1, b1, W2, b2, X, Y):
    H = np.tanh(X @ W1 + b1)
    dO = (H @ W2 + b2 - Y) * (2.0 / Y.size)
    dZ = (dO @ W2.T) * (1.0 - H * H)
    return X.T @ dZ, dZ.sum(axis=0), H.T @ dO, dO.sum(axis=0)


def hand_logreg(lam):
    def grad(w, b, X, y):
        z = X @ w + b
        r = (1.0 / (1.0 + np.exp(-z)) - y) / y.shape[0]
        return X.T @ r + lam * w, r.sum()
    return grad


def hand_attention(d):
    c = 1.0 / math.sqrt(d)

    def grad(Q, K, V, G):
        S = (Q @ K.T) * c
        S -= S.max(axis=1, keepdims=True)
        P = np.exp(S)
        P /= P.sum(axis=1, keepdims=True)
        dP = G @ V.T
        dS = P * (dP - (dP * P).sum(axis=1, keepdims=True)) * c
        return dS @ K, dS.T @ Q, P.T @ G
    return grad


def build_hand(problem, p, inputs):
    args = list(inputs.values())
    if problem == "seed_simple":
        fn = hand_seed_simple
    elif problem == "seed_module":
        fn = hand_seed_module
    elif problem == "chain":
        fn = hand_chain(p["K"])
        args = [float(a) for a in args]
    elif problem == "rosenbrock":
        fn = hand_rosenbrock
    elif problem == "mlp":
        fn = hand_mlp
    elif problem == "logreg":
        fn = hand_logreg(p["lam"])
    elif problem == "attention":
        fn = hand_attention(p["d"])
    else:
        raise KeyError(problem)
    note = "plain floats + math" if problem == "chain" else ""
    if problem == "attention":
        note = "softmax with max shift"
    return Cell(lambda: fn(*args), lambda r: [np.asarray(t) for t in r], note=note,
                version=np.__version__)


BUILDERS = {
    "torch": build_torch,
    "sg-numpy": lambda pr, p, i: build_symgrad(pr, p, i, "numpy"),
    "sg-torch": lambda pr, p, i: build_symgrad(pr, p, i, "torch"),
    "numpy": build_hand,
    "jax": build_jax,
    "casadi-sx": lambda pr, p, i: build_casadi(pr, p, i, "SX"),
    "casadi-mx": lambda pr, p, i: build_casadi(pr, p, i, "MX"),
    "pytensor": build_pytensor,
    "sympy": build_sympy,
}


def builder(peer, problem):
    """The builder of ``peer``; ``sg-<backend>`` for any registered symgrad backend."""
    if peer.startswith("sg-") and peer not in BUILDERS:
        return lambda pr, p, i: build_symgrad(pr, p, i, peer[3:])
    return BUILDERS.get(peer)
