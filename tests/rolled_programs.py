"""Random looped programs for ``tests/test_rolled_fuzz.py``: a seed gives the source of a
Python function written with sg ops whose trace repeats a body (a ``for`` loop unrolled
by tracing), its shapes, ``wrt`` and arguments.

The program is generated as text and run with ``exec``, so a failing seed prints as a
function one can paste and run. sg ops compute directly on torch tensors, so the same
function is its own ``torch.autograd`` reference.

Shapes come in three classes: ``S`` (a scalar), ``V`` (``(N,)``) and ``M``
(``(Mdim, N)``), where N is the dim ``n`` or 3 and Mdim the dim ``m`` or 2 (mixed within
a program). Values stay tame: each carry's update mixes its old value with a squashed
(tanh, sin, sigmoid) term with weights summing to at most 1, and factors are below 1.
"""
import numpy as np

import symgrad as sg

UNARY = ["sg.sin({})", "sg.cos({})", "sg.tanh({})", "sg.sigmoid({})",
         "(sg.softplus({}) * 0.5)", "sg.relu({})", "sg.abs({})", "sg.exp(sg.tanh({}))",
         "sg.exp(-({}) ** 2)", "sg.sqrt(({}) ** 2 + 0.25)", "sg.sqrt(sg.sigmoid({}))"]
SQUASH = ["sg.tanh", "sg.sin", "sg.sigmoid"]
SUB = {"S": ["S"], "V": ["V", "S"], "M": ["M", "V", "S"]}


class Input:
    def __init__(self, name, cls=None, shape=None, kind="float", symmetric=False, high=None,
                 bounded=False):
        self.name, self.cls, self.kind, self.symmetric = name, cls, kind, symmetric
        self.bounded = bounded      # drawn in (-0.9, 0.9): a factor of a carry
        self.shape = shape          # explicit shape (dims as str/int), else from cls
        self.high = high            # ids: the dim their values index


class LoopedProgram:
    """One generated program: ``source`` defines ``f``; ``fn`` is it; ``shapes`` and
    ``wrt`` are for ``sg.grad_fn``; ``features`` say what it exercises; ``regular``
    says it is a single loop of identical steps (``steps`` of them), which must roll when
    it is long enough."""

    def __init__(self, seed, source, namespace, inputs, shapes, wrt, dims, features,
                 regular, steps, carries):
        self.seed, self.source, self.inputs = seed, source, inputs
        self.shapes, self.wrt, self.dims = shapes, wrt, dims
        self.features, self.regular, self.steps = features, regular, steps
        self.carries = carries
        exec(compile(source, f"<rolled program {seed}>", "exec"), namespace)
        self.fn = namespace["f"]
        self.namespace = namespace

    def __repr__(self):
        return f"<program {self.seed}: {', '.join(self.features)}>"

    def sizes(self, dims=None):
        return {**self.dims, **(dims or {})}

    def shape_of(self, x, dims=None):
        sizes = self.sizes(dims)
        return tuple(d if isinstance(d, int) else sizes[d] for d in x.shape)

    def arguments(self, dims=None, seed=None):
        """NumPy arguments (float64 floats, int64 ids, bool masks; symmetric matrices
        symmetric), for the dims ``self.dims`` updated by ``dims``."""
        rng = np.random.default_rng(1000 + self.seed if seed is None else seed)
        sizes = self.sizes(dims)
        out = []
        for x in self.inputs:
            shape = self.shape_of(x, dims)
            if x.kind == "int":
                high = x.high if isinstance(x.high, int) else sizes[x.high]
                out.append(rng.integers(0, max(high, 1), shape))
            elif x.kind == "bool":
                out.append(rng.random(shape) < 0.5)
            else:
                value = rng.standard_normal(shape) * 0.5
                if x.bounded:
                    value = rng.uniform(-0.9, 0.9, shape)
                if x.symmetric:
                    value = (value + value.T) / 2
                out.append(float(value) if not shape else value)
        return out


class _Gen:
    def __init__(self, seed):
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.features = []
        self.inputs = []
        self.globals = {}           # captured constants: name -> value
        self.pre = []               # lines before the loop
        self.temps = 0
        self.block = None           # lines of the block being written
        # N and Mdim: symbolic or concrete, chosen independently (mixed)
        self.N = "n" if self.chance(0.6) else 3
        self.Mdim = "m" if self.chance(0.5) else 2
        self.dims = {}
        if self.N == "n":
            self.dims["n"] = int(self.pick([2, 3, 4]))
        if self.Mdim == "m":
            self.dims["m"] = int(self.pick([2, 3]))

    # -- randomness
    def chance(self, p):
        return self.rng.random() < p

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def num(self, lo=0.2, hi=0.9):
        return round(float(self.rng.uniform(lo, hi)), 2)

    # -- shapes
    def shape(self, cls):
        return {"S": (), "V": (self.N,), "M": (self.Mdim, self.N)}[cls]

    def add_input(self, name, cls=None, **kw):
        x = Input(name, cls, shape=kw.pop("shape", None), **kw)
        if x.shape is None:
            x.shape = self.shape(cls)
        self.inputs.append(x)
        return name

    def bind(self, code):
        name = f"t{self.temps}"
        self.temps += 1
        self.block.append(f"{name} = {code}")
        return name

    # -- expressions: code of an exact shape class
    def leaf(self, cls):
        options = [c for c, k in self.carries_now if k == cls] * 3
        options += [c for c, k in self.invariants if k == cls]
        reducible = [(c, k) for c, k in self.carries_now if k != cls and
                     (cls == "S" or (cls == "V" and k == "M"))]
        if reducible and (not options or self.chance(0.3)):
            c, _ = self.pick(reducible)
            if cls == "S":
                return self.pick([f"sg.mean({c})", f"(sg.sum({c}) * 0.2)", f"sg.max({c})"])
            return self.pick([f"sg.mean({c}, axis=0)", f"sg.max({c}, axis=0)"])
        return self.pick(options)

    def expr(self, cls, depth):
        if depth <= 0 or self.chance(0.2):
            return self.leaf(cls)
        d = depth - 1
        r = self.rng.random()
        if r < 0.3:
            return self.pick(UNARY).format(self.expr(cls, d))
        if r < 0.5:
            sub = self.pick(SUB[cls])
            left = self.expr(cls, d)
            if self.chance(0.3):
                right = self.constant(sub)
                if right in self.globals:     # a NumPy constant: sg's function form
                    fn = self.pick(["sg.add", "sg.sub", "sg.mul"])
                    return f"{fn}({left}, {right})"
            else:
                right = self.expr(sub, d)
            return f"({left} {self.pick(['+', '-', '*'])} {right})"
        if r < 0.58:
            fn = self.pick(["sg.maximum", "sg.minimum"])
            return f"{fn}({self.expr(cls, d)}, {self.expr(self.pick(SUB[cls]), d)})"
        if r < 0.66:
            if cls != "S" and self.mask and self.chance(0.5):
                cond = "mask"
            else:
                cond = f"{self.expr(self.pick(SUB[cls]), d)} > {self.num(-0.3, 0.3)}"
            return (f"sg.where({cond}, {self.expr(cls, d)}, "
                    f"{self.expr(self.pick(SUB[cls]), d)})")
        if r < 0.76:
            return self.reduction(cls, d)
        if r < 0.86 and cls != "S" and self.matrices:
            return self.matmul(cls, d)
        if cls != "S":
            return self.shuffle(cls, d)
        return self.pick(UNARY).format(self.expr(cls, d))

    def constant(self, cls):
        consts = [c for c, k in self.captured if k == cls]
        if consts and self.chance(0.7):
            return self.pick(consts)
        return str(self.num(-0.9, 0.9))

    def reduce_to(self, c, k, cls):
        """Carry ``c`` of class ``k`` as a term of class ``cls``: reduced, or broadcast."""
        if cls == "S":
            return f"sg.mean({c})"
        if cls == "V" and k == "M":
            return f"sg.mean({c}, axis=0)"
        return f"sg.sum({c}) * 0.1"       # a scalar term broadcasts

    def has(self, cls):
        return any(k == cls for _, k in self.carries_now + self.invariants)

    def reduction(self, cls, d):
        if cls == "S":
            big = [c for c in ("V", "M") if self.has(c)]
            if not big:
                return self.pick(UNARY).format(self.expr(cls, d))
            e = self.expr(self.pick(big), d)
            return self.pick([f"sg.mean({e})", f"(sg.sum({e}) * 0.2)", f"sg.max({e})",
                              f"sg.min({e})"])
        if cls == "V":
            if self.has("M") and self.chance(0.5):
                e = self.expr("M", d)
                return self.pick([f"sg.mean({e}, axis=0)", f"sg.max({e}, axis=0)",
                                  f"(sg.sum({e}, axis=0) * 0.3)"])
            t = self.bind(self.expr("V", d))
            return self.pick([f"({t} - sg.mean({t}))",
                              f"(sg.max({t}, axis=0, keepdims=True) * 0.5 + {t})",
                              f"({t} * sg.sum({t}) * 0.1)"])
        t = self.bind(self.expr("M", d))
        return self.pick([f"({t} - sg.mean({t}, axis=1, keepdims=True))",
                          f"(sg.max({t}, axis=0, keepdims=True) * 0.5 - {t})",
                          f"(sg.sum({t}, axis=1, keepdims=True) * 0.2 + {t})",
                          f"({t} * sg.mean({t}, axis=0))"])

    def matmul(self, cls, d):
        mat = self.pick(self.matrices)
        e = self.expr(cls, d)
        if cls == "V":
            return f"(sg.matmul({mat}, {e}) * 0.3)"
        return f"(sg.matmul({e}, {mat}) * 0.3)"

    def shuffle(self, cls, d):
        """Indexing, slicing and concatenation that keep the shape."""
        t = self.bind(self.expr(cls, d))
        if cls == "V":
            options = [f"sg.concatenate([{t}[1:], {t}[:1]])", f"sg.flip({t}, axis=0)",
                       f"sg.concatenate([{t}[:1] * 0.5, {t}[1:]])"]
            if self.perm:
                options.append(f"{t}[perm]")
            return self.pick(options)
        return self.pick([f"sg.concatenate([{t}[:, 1:], {t}[:, :1]], axis=1)",
                          f"sg.flip({t}, axis=1)",
                          f"sg.concatenate([{t}[1:], {t}[:1]], axis=0)"])

    # -- the program
    def build(self):
        rng = self.rng
        features = self.features
        ncar = int(self.pick([1, 1, 1, 2, 2, 3, 4]))
        classes = [self.pick(["S", "S", "V", "V", "M"]) for _ in range(ncar)]
        if all(c == "S" for c in classes) and self.chance(0.3):
            features.append("scalars")
        used = set(classes)
        # invariants: inputs of each class used, sometimes more
        self.invariants = []
        self.captured = []
        self.matrices = []
        self.mask = False
        self.perm = False
        self.add_input("a", "S")
        self.invariants.append(("a", "S"))
        if "V" in used or "M" in used or self.chance(0.3):
            self.add_input("v", "V")
            self.invariants.append(("v", "V"))
            if self.chance(0.6):
                if self.chance(0.35):
                    self.add_input("A", shape=(self.N, self.N), symmetric=True)
                    self.matrices.append("A")
                    features.append("symmetric")
                else:
                    self.add_input("W", shape=(self.N, self.N))
                    self.matrices.append("W")
            if self.chance(0.25):
                self.add_input("mask", shape=(self.N,), kind="bool")
                self.mask = True
                features.append("mask")
            if self.chance(0.25):
                table = "l" if self.N == "n" else 5
                if table == "l":
                    self.dims["l"] = int(self.pick([4, 5]))
                self.add_input("w", shape=(table,))
                self.add_input("ids", shape=(self.N,), kind="int", high=table)
                self.pre.append("g = w[ids] * 0.5")
                self.invariants.append(("g", "V"))
                features.append("ids")
            if self.chance(0.15):
                self.add_input("perm", shape=(self.N,), kind="int", high=self.N)
                self.perm = True
                features.append("perm")
        if "M" in used:
            self.add_input("B", "M")
            self.invariants.append(("B", "M"))
        if not self.matrices and ("V" in used or "M" in used) and self.chance(0.5):
            self.add_input("W", shape=(self.N, self.N))
            self.matrices.append("W")
        if not self.matrices:
            self.matrices = None
        # values computed before the loop
        if self.chance(0.5):
            k = self.pick([c for c in ["S", "V", "M"] if any(i == c for _, i in self.invariants)])
            self.block = self.pre
            src = self.pick([i for i, c in self.invariants if c == k])
            self.pre.append(f"p0 = sg.tanh({src}) * 0.5 + {self.num()}")
            self.invariants.append(("p0", k))
            features.append("precomputed")
        if self.matrices and self.chance(0.3):
            m = self.matrices[0]
            self.pre.append(f"G = sg.matmul(sg.transpose({m}), {m}) * 0.2")
            self.matrices.append("G")
            features.append("gram")
        if self.chance(0.4):
            features.append("captured")
            self.globals["K0"] = np.float64(self.num())
            self.captured.append(("K0", "S"))
            if self.N != "n":
                self.globals["C0"] = np.round(self.rng.uniform(-0.9, 0.9, (self.N,)), 2)
                self.captured.append(("C0", "V"))
                if self.Mdim != "m":
                    self.globals["D0"] = np.round(
                        self.rng.uniform(-0.9, 0.9, (self.Mdim, self.N)), 2)
                    self.captured.append(("D0", "M"))

        # carries and their inits
        self.carries = []            # (name, cls)
        self.zero_init = set()       # carries starting at a constant
        inits = []
        for j, cls in enumerate(classes):
            name = f"c{j}"
            form = rng.random()
            same = [i for i, c in self.invariants if c == cls]
            if form < 0.5:
                inits.append(f"{name} = {self.add_input(f'x{j}', cls)}")
            elif form < 0.7:
                inits.append(f"{name} = sg.tanh({self.add_input(f'x{j}', cls)}) * 0.5")
            elif form < 0.85 and same:
                inits.append(f"{name} = {self.pick(same)}")
                features.append("init=invariant")
            else:
                src = self.pick(same) if same else "a"
                inits.append(f"{name} = {src} * 0.0")
                self.zero_init.add(name)
                features.append("init=zero")
            self.carries.append((name, cls))
        # tiers: long regular loops (most), loops around the thresholds, and long loops
        # with a structure: a lag, an odd step, a middle read, two loops, nested loops
        tier = self.pick(["long"] * 5 + ["threshold"] * 2 + ["structure"] * 3)
        features.append(tier)
        structure = self.pick(["lag2", "flip", "odd", "mid", "second", "nested"]) \
            if tier == "structure" else None
        lag = flip = None
        if structure == "lag2" or tier == "long" and self.chance(0.05):
            name, cls = self.carries[0]
            lag = "cp"
            inits.append(f"cp = {name} * 0.5")
            features.append("lag2")
        if structure == "flip":
            flip = ("u0", "u1")
            inits.append("u0, u1 = a * 0.5, sg.cos(a) * 0.5")
            features.append("flip")
        acc = self.chance(0.3)
        if acc:
            features.append("accumulator")
            if self.chance(0.5):
                inits.append(f"s = {self.add_input('s0', 'S')}")
            else:
                inits.append("s = a * 0.0")
        if tier == "threshold":
            K = int(self.pick([7, 8, 9, 10, 11, 12]))
        elif tier == "long":
            K = int(self.pick([12, 16, 20, 24, 30, 40]))
        else:
            K = int(self.pick([20, 24, 30, 40]))
        nested = structure == "nested"
        second = structure == "second"
        odd = structure == "odd"
        mid = structure == "mid"
        if nested:
            features.append("nested")
            K = int(self.pick([10, 12, 16]))
        features.append(f"K={K}")

        # the body
        body = []
        self.block = body
        self.carries_now = list(self.carries)
        if lag:
            self.carries_now.append((lag, self.carries[0][1]))
        if flip:
            self.carries_now += [(flip[0], "S"), (flip[1], "S")]
        # near the thresholds (MIN_STEPS copies, MIN_NODES nodes) a body of 4 terms
        size = 4 if tier == "threshold" else self.pick([2, 3, 3, 4])
        self.coupled = self.chance(0.85)
        sequential = self.chance(0.3)
        updates = []
        swap = None
        pairs = [(i, j) for i in range(ncar) for j in range(i + 1, ncar)
                 if classes[i] == classes[j]]
        if pairs and self.chance(0.3):
            swap = self.pick(pairs)
            features.append("swap")
        oddk = int(rng.integers(2, max(3, K - 2))) if odd else None
        odd_form = self.pick(["extra", "const", "op"]) if odd else None
        if odd:
            features.append(f"odd:{odd_form}@{oddk}")
        for j, (name, cls) in enumerate(self.carries):
            if swap and j == swap[0]:
                continue
            updates.append((name, self.update(name, cls, size, j, oddk, odd_form)))
            if sequential:
                body.append(f"{name} = {updates[-1][1]}")
        if acc:
            name, cls = self.pick(self.carries)
            term = f"0.05 * sg.{self.pick(['sum', 'mean'])}({self.pick(SQUASH)}({name}))"
            if sequential:
                body.append(f"s = s + {term}")
            else:
                updates.append(("s", f"s + {term}"))
        if sequential:
            features.append("sequential")
            assigns = []
        else:
            assigns = list(updates)
        if swap:
            i, j = swap
            assigns.append((f"c{i}", f"c{j}"))
        if lag:
            if sequential:
                body.insert(0, f"old = {self.carries[0][0]}")
                assigns.append((lag, "old"))
            else:
                assigns.append((lag, self.carries[0][0]))
        if flip:
            assigns += [(flip[0], flip[1]), (flip[1], flip[0])]
        if assigns:
            body.append(", ".join(n for n, _ in assigns) + " = "
                        + ", ".join(e for _, e in assigns))
        if odd and odd_form == "extra":
            body += [f"if k == {oddk}:", "    c0 = c0 * 0.8"]
        midk = None
        if mid:
            midk = int(rng.integers(K // 2, K - 2))
            what = self.pick(["c0", "t0"]) if self.temps else "c0"
            body += [f"if k == {midk}:", f"    mid = {what}"]
            features.append(f"mid:{what}@{midk}")

        lines = ["def f(" + ", ".join(x.name for x in self.inputs) + "):"]
        lines += ["    " + s for s in self.pre + inits]
        if nested:
            KO = int(self.pick([2, 3]))
            lines.append(f"    for i in range({KO}):")
            lines.append(f"        for k in range({K}):")
            lines += ["            " + s for s in body]
            self.block = outer = []
            outer.append(f"c0 = c0 * 0.9 + 0.1 * sg.tanh({self.expr(self.carries[0][1], 1)})")
            lines += ["        " + s for s in outer]
        else:
            lines.append(f"    for k in range({K}):")
            lines += ["        " + s for s in body]
        if second:
            K2 = int(self.pick([8, 9, 12, 20]))
            features.append(f"second K={K2}")
            self.block = body2 = []
            name, cls = self.carries[-1]
            body2.append(f"{name} = 0.6 * {name} + 0.4 * sg.sin({self.expr(cls, 2)} * 0.5)")
            lines.append(f"    for k in range({K2}):")
            lines += ["        " + s for s in body2]
        # the tail: a scalar of the final carries (and the middle value)
        self.block = tail = []
        terms = []
        for name, cls in self.carries:
            terms.append(self.tail_term(name, cls))
        if mid:
            terms.append("sg.sum(sg.tanh(mid)) * 0.5")
        if lag:
            terms.append("sg.sum(cp) * 0.3")
        if acc:
            terms.insert(0 if self.chance(0.5) else len(terms), "s")
        if flip:
            terms.append("u0 * 0.2")
        if self.chance(0.2):
            terms.append("a ** 2")
        pre = dict(self.invariants).get("p0")
        if pre in ("V", "M") and self.chance(0.5):
            # the tail reads a value of the head and a slice of an input: their gradient
            # sums the head's value and a gradient slice
            x = self.pick([x.name for x in self.inputs if x.cls == pre and x.kind == "float"
                           and not x.bounded])
            terms.append(f"sg.sum({x} * p0) + {x}[{'0' if pre == 'V' else '0, 0'}] * 0.5")
            features.append("tail-slice")
        lines += ["    " + s for s in tail]
        lines.append("    return " + " + ".join(terms))
        source = "\n".join(lines) + "\n"

        floats = [x.name for x in self.inputs if x.kind == "float"]
        wrt = None
        if self.chance(0.3):
            k = int(rng.integers(1, len(floats) + 1))
            wrt = sorted(rng.choice(floats, size=k, replace=False).tolist(),
                         key=floats.index)
            features.append("wrt")
        shapes = {}
        for x in self.inputs:
            if x.kind != "float" or x.symmetric:
                dtype = {"int": "int64", "bool": "bool"}.get(x.kind, "float64")
                shapes[x.name] = sg.TensorSpec(x.shape, dtype=dtype, symmetric=x.symmetric)
            elif x.shape:
                shapes[x.name] = x.shape
        used_dims = {d for x in self.inputs for d in x.shape if isinstance(d, str)}
        dims = {d: size for d, size in self.dims.items() if d in used_dims}
        features = list(dict.fromkeys(features))
        regular = not (nested or second or odd or mid or flip)
        carries = len(self.carries) + bool(lag) + bool(acc)
        namespace = {"sg": sg, "np": np, **self.globals}
        return LoopedProgram(self.seed, source, namespace, self.inputs, shapes, wrt,
                             dims, features, regular, K, carries)

    def update(self, name, cls, size, j, oddk, odd_form):
        terms = [self.expr(cls, int(self.pick([2, 3, 3, 4]))) for _ in range(size)]
        if self.coupled and len(self.carries) > 1:
            # read the carry before (cyclically): no carry's chain is independent
            other, k = self.carries[j - 1]
            terms.append(other if k == cls else self.reduce_to(other, k, cls))
        if name in self.zero_init:
            # a chain of constants only would be folded by SymPy, exactly: sin(sin(1))...
            terms.append("a * 0.1")
        inner = " + ".join(terms) if len(terms) > 1 else terms[0]
        squash = self.pick(SQUASH)
        if oddk is not None and j == 0 and odd_form == "op":
            squash = f"({self.pick(['sg.sin', 'sg.cos'])} if k == {oddk} else {squash})"
        form = self.rng.random()
        if form < 0.2:
            # linear in an input: the tail's gradient may be the last carry itself
            if cls != "S" and self.chance(0.5):
                if "rv" not in [x.name for x in self.inputs]:
                    self.add_input("rv", "V", bounded=True)
                r = "rv"
            else:
                if "r" not in [x.name for x in self.inputs]:
                    self.add_input("r", "S", bounded=True)
                r = "r"
            self.features.append("linear")
            return f"{name} * {r} + 0.1 * {squash}({inner})"
        if form < 0.3:
            return f"{squash}({inner})"
        alpha = self.num(0.3, 0.8)
        beta = round(1 - alpha, 2)
        if oddk is not None and j == 0 and odd_form == "const":
            beta = f"({round(beta * 0.7, 2)} if k == {oddk} else {beta})"
        return f"{alpha} * {name} + {beta} * {squash}({inner})"

    def tail_term(self, name, cls):
        r = self.rng.random()
        if r < 0.3:
            return f"sg.sum({name})" if cls != "S" else name
        if r < 0.5:
            return f"sg.sum({name} ** 2)" if cls != "S" else f"{name} ** 2"
        if r < 0.7:
            inv = self.pick([c for c, k in self.invariants if k in SUB[cls]])
            return f"sg.sum({name} * {inv})"
        if r < 0.85:
            return f"sg.mean(sg.sin({name}))"
        return f"sg.sum(sg.tanh({name}) * {self.num()})"


def generate(seed):
    """The ``LoopedProgram`` of ``seed``."""
    return _Gen(seed).build()


if __name__ == "__main__":
    import sys
    for arg in sys.argv[1:]:
        prog = generate(int(arg))
        print(f"# seed {prog.seed}: {', '.join(prog.features)}; shapes={prog.shapes}, "
              f"wrt={prog.wrt}, dims={prog.dims}")
        print(prog.source)
