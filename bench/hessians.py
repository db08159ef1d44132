"""The second-order rows of bench/run.py (issue 18, Build 7): closed-form second
derivatives, where a symbolic tool should lead by the widest margin.

    logreg-hess  the Hessian of problems.py's logistic regression w.r.t. w (d × d), N=1000 d=50
    quad         the Hessian of f(x, A) = xᵀ A x w.r.t. x (A + Aᵀ), n = 100
    mlp-hvp      a Hessian-vector product of problems.py's MLP loss w.r.t. (W1, b1, W2, b2)
                 in the direction (V1, c1, V2, c2), 16/16/16 batch 8

Peers: torch.func (``hessian``; ``jvp`` of ``grad`` for the HVP, the reference every other
result is checked against), ``jax.jit(jax.hessian)`` (``jax.jit`` of ``jvp`` of ``grad``),
CasADi SX and MX (``ca.hessian``; ``ca.jtimes`` of the gradient), a hand-written NumPy
Hessian (logreg, quad) and symgrad with each registered backend: ``sg.hessian(f,
shapes=...).compile(backend)``, and for the HVP ``sg.grad_fn`` of ⟨∇f, v⟩, whose gradient
is H v.
"""
import math

import numpy as np

import problems as P
from problems import NS, Cell, _timed, forward, sg_ns

PROBLEMS = ("logreg-hess", "quad", "mlp-hvp")
BASE = {"logreg-hess": "logreg", "mlp-hvp": "mlp"}
SIZES = {
    "logreg-hess": [("N=1000 d=50", {"N": 1000, "d": 50, "lam": 1e-2})],
    "quad": [("n=100", {"n": 100})],
    "mlp-hvp": [("16/16/16 b8", {"d": 16, "h": 16, "o": 16, "B": 8})],
}
QUICK = {k: [v[0][0]] for k, v in SIZES.items()}
WRT = {"logreg-hess": ("w",), "quad": ("x",), "mlp-hvp": ("W1", "b1", "W2", "b2")}
TANGENTS = ("V1", "c1", "V2", "c2")
SG_SHAPES = {
    "logreg-hess": P.SG_SHAPES["logreg"],
    "quad": {"x": ("n",), "A": ("n", "n")},
    "mlp-hvp": dict(P.SG_SHAPES["mlp"], V1=("d", "h"), c1=("h",), V2=("h", "o"), c2=("o",)),
}
LABELS = {"torch": {"mlp-hvp": "torch.func jvp(grad)"},
          "jax": {"mlp-hvp": "jax.jit(jvp(grad))"}}
DEFAULT_LABEL = {"torch": "torch.func.hessian", "jax": "jax.jit(hessian)"}


def label(peer, problem):
    return LABELS.get(peer, {}).get(problem) or DEFAULT_LABEL.get(peer)


def work(problem, p):
    if problem == "quad":
        return 2 * p["n"] ** 2
    return P.work(BASE[problem], p)


def make_inputs(problem, p, seed=0):
    rng = np.random.default_rng(seed)
    if problem == "quad":
        return {"x": rng.standard_normal(p["n"]), "A": rng.standard_normal((p["n"], p["n"]))}
    inputs = P.make_inputs(BASE[problem], p, seed)
    if problem == "mlp-hvp":
        for t, k in zip(TANGENTS, WRT[problem]):
            inputs[t] = rng.standard_normal(inputs[k].shape)
    return inputs


def loss(problem, p, ns, args):
    if problem == "quad":
        x, A = args
        return ns.sum(x * (A @ x))
    n = len(P.SG_SHAPES[BASE[problem]])
    return forward(BASE[problem], p, ns, args[:n])


def _positions(problem, inputs):
    names = list(inputs)
    return tuple(names.index(k) for k in WRT[problem])


# ----- torch.func ----------------------------------------------------------------------

def build_torch(problem, p, inputs):
    import torch
    torch.set_num_threads(1)
    ns = P.torch_ns()
    ts = [torch.tensor(v, dtype=torch.float64) for v in inputs.values()]
    pos = _positions(problem, inputs)
    n = len(ts) - (len(TANGENTS) if problem == "mlp-hvp" else 0)

    def f(*args):
        return loss(problem, p, ns, args)

    if problem == "mlp-hvp":
        data = ts[len(pos):n]

        def g(*params):
            return f(*params, *data)
        grad = torch.func.grad(g, argnums=tuple(range(len(pos))))
        primals, tangents = tuple(ts[:len(pos)]), tuple(ts[n:])

        def call():
            return torch.func.jvp(grad, primals, tangents)[1]
        tonp = lambda r: [t.numpy() for t in r]  # noqa: E731
    else:
        hess = torch.func.hessian(f, argnums=pos[0])

        def call():
            return (hess(*ts),)
        tonp = lambda r: [r[0].numpy()]  # noqa: E731
    return Cell(call, tonp, note="forward-over-reverse each call", version=torch.__version__)


# ----- JAX -----------------------------------------------------------------------------

def build_jax(problem, p, inputs):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    ns = NS(sin=jnp.sin, cos=jnp.cos, tanh=jnp.tanh, exp=jnp.exp, softplus=jax.nn.softplus,
            sum=jnp.sum, mean=jnp.mean, T=lambda a: a.T, softmax_rows=None)
    args = [jax.device_put(jnp.asarray(v, dtype=jnp.float64)) for v in inputs.values()]
    pos = _positions(problem, inputs)

    def f(*a):
        return loss(problem, p, ns, a)

    if problem == "mlp-hvp":
        k = len(pos)
        n = len(args) - len(TANGENTS)

        def hvp(*a):
            params, data, tans = a[:k], a[k:n], a[n:]
            grad = jax.grad(lambda *q: f(*q, *data), argnums=tuple(range(k)))
            return jax.jvp(grad, tuple(params), tuple(tans))[1]
        fn = hvp
    else:
        fn = jax.hessian(f, argnums=pos[0])

    def build():
        jf = jax.jit(fn)
        return (lambda: jax.block_until_ready(jf(*args)),)

    derive, _, (call,) = _timed(build)
    tonp = (lambda r: [np.asarray(t) for t in r]) if problem == "mlp-hvp" else \
        (lambda r: [np.asarray(r)])
    return Cell(call, tonp, derive=derive, note="derive = trace + XLA compile (first call)",
                version=jax.__version__)


# ----- CasADi --------------------------------------------------------------------------

def build_casadi(problem, p, inputs, kind):
    import casadi as ca
    cls = ca.SX if kind == "SX" else ca.MX
    args = [float(v) if np.ndim(v) == 0 else v for v in inputs.values()]

    def build():
        if problem == "quad":
            x, A = cls.sym("x", p["n"]), cls.sym("A", p["n"], p["n"])
            syms, value = [x, A], ca.dot(x, ca.mtimes(A, x))
            H, _ = ca.hessian(value, x)
            fn = ca.Function("h", syms, [H])
        else:
            syms, value = P.casadi_loss(BASE[problem], p, ca, cls.sym)
            names = list(inputs)
            wrt = [syms[names.index(k)] for k in WRT[problem]]
            if problem == "logreg-hess":
                H, _ = ca.hessian(value, wrt[0])
                fn = ca.Function("h", syms, [H])
            else:
                tans = [cls.sym(t, *np.shape(inputs[t])) if np.ndim(inputs[t]) == 2
                        else cls.sym(t, np.size(inputs[t])) for t in TANGENTS]
                flat = ca.vertcat(*[ca.vec(w) for w in wrt])
                v = ca.vertcat(*[ca.vec(t) for t in tans])
                hv = ca.jtimes(ca.gradient(value, flat), flat, v)
                fn = ca.Function("hvp", syms + tans, [hv])
        return (lambda: fn(*args), fn)

    derive, _, (call, fn) = _timed(build)

    def tonp(r):
        r = np.array(r).ravel()
        if problem != "mlp-hvp":
            n = int(math.isqrt(r.size))
            return [r.reshape(n, n)]
        out, i = [], 0
        for k in WRT[problem]:
            shape = np.shape(inputs[k])
            size = int(np.prod(shape))
            # CasADi's vec is column-major
            out.append(r[i:i + size].reshape(shape[::-1]).T if len(shape) == 2
                       else r[i:i + size])
            i += size
        return out

    return Cell(call, tonp, derive=derive, ops=None,
                note="ca.hessian" if problem != "mlp-hvp" else "ca.jtimes of the gradient",
                version=ca.__version__)


# ----- hand-written NumPy --------------------------------------------------------------

def build_hand(problem, p, inputs):
    args = list(inputs.values())
    if problem == "logreg-hess":
        lam, eye = p["lam"], np.eye(p["d"])

        def fn(w, b, X, y):
            s = 1.0 / (1.0 + np.exp(-(X @ w + b)))
            return ((X.T * (s * (1.0 - s) / y.shape[0])) @ X + lam * eye,)
    elif problem == "quad":
        def fn(x, A):
            return (A + A.T,)
    else:
        raise KeyError(problem)
    return Cell(lambda: fn(*args), lambda r: [np.asarray(t) for t in r], version=np.__version__)


# ----- symgrad -------------------------------------------------------------------------

def sg_function(problem, p, sg):
    """(f, shapes, wrt, hvp): f named after its parameters, as grad_fn reads them."""
    ns = sg_ns()
    shapes = SG_SHAPES[problem]
    names = list(shapes)
    if problem == "mlp-hvp":
        k = len(WRT[problem])
        n = len(names) - len(TANGENTS)

        def f(*a):
            params, data, tans = a[:k], a[k:n], a[n:]
            grads = sg.grad(loss(problem, p, ns, list(params) + list(data)), list(params))
            return sum(sg.sum(g * t) for g, t in zip(grads, tans))
    else:
        def f(*a):
            return loss(problem, p, ns, a)
    name = problem.replace("-", "_")
    src = f"def {name}({', '.join(names)}):\n    return _f({', '.join(names)})\n"
    scope = {"_f": f}
    exec(src, scope)  # noqa: S102 - a named-parameter wrapper around f
    return scope[name], shapes, list(WRT[problem]), problem == "mlp-hvp"


def build_symgrad(problem, p, inputs, backend):
    import symgrad as sg
    args = [P.sg_convert(backend)(v) for v in inputs.values()]
    holder = {}

    def build():
        f, shapes, wrt, hvp = sg_function(problem, p, sg)
        if hvp:
            fn = sg.grad_fn(f, wrt=wrt, shapes=shapes).compile(backend)
        else:
            fn = sg.hessian(f, wrt=wrt[0], shapes=shapes).compile(backend)
        holder["hvp"] = hvp
        return (lambda: fn(*args),)

    derive, _, (call,) = _timed(build)
    tonp = (lambda r: [P.sg_numpy(t) for t in r]) if holder["hvp"] else \
        (lambda r: [P.sg_numpy(r)])
    note = "grad_fn of <grad f, v>" if holder["hvp"] else "sg.hessian(f, shapes).compile()"
    return Cell(call, tonp, derive=derive, note=note, version=sg.__version__)


BUILDERS = {
    "torch": build_torch,
    "numpy": build_hand,
    "jax": build_jax,
    "casadi-sx": lambda pr, p, i: build_casadi(pr, p, i, "SX"),
    "casadi-mx": lambda pr, p, i: build_casadi(pr, p, i, "MX"),
}


def builder(peer, problem):
    """The builder of ``peer`` for ``problem``, or None when the peer has none."""
    if peer.startswith("sg-"):
        return lambda pr, p, i: build_symgrad(pr, p, i, peer[3:])
    if peer == "numpy" and problem == "mlp-hvp":
        return None
    return BUILDERS.get(peer)
