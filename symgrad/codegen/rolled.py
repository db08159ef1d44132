"""Code for a rolled gradient (``core.loops.RolledGradient``, built by ``diff.rolled``):
the function computes the head, runs the loop's body ``steps`` times saving the values its
VJP reads, computes the tail and its VJP, runs the body's VJP ``steps`` times in reverse
order, then the head's VJP. Each of the five parts is a ``Program`` printed by
``emit.statement_lines``; a later part reads what an earlier one computed by its name
(``Program(known=...)``), so nothing is computed twice. The argument checks, the ``math``
fast path with its NumPy fallback and the error translation are ``emit``'s, as for any
function; the code is as long as one copy of the body, whatever the number of steps.

Names: the loop's carries live in ``_lc<j>`` (the backward loop reads their saved values
as ``_lr<j>``), the cotangents of the carries in ``_lg<j>`` and of the invariants in
``_lv<j>``, the saved values in the lists ``_ls<j>``; generated
names start with one underscore and no user name is written so (``core.names``).
"""
from ..core.build import gc_paused
from ..core.program import Program
from ..errors import ArgumentError
from . import emit, heap, numba_compile, threads
from .backends import backend as backend_named
from .compile import load
from .emit import (_ids_memo, checked_zero_shapes, function_source, results_code,
                   statement_lines)
from .names import code_name


# backends whose rolled code has a pipeline of its own: name -> its module (compile, source)
PIPELINES = {"numba": numba_compile.Rolled}


class _ArrayNames:
    """One name per captured array across the programs of a function."""

    def __init__(self, local):
        self.local = local
        self.names = {}
        self.values = {}

    def __call__(self, node, k):
        name = self.names.get(id(node))
        if name is None:
            name = f"_c{len(self.names)}{self.local}"
            self.names[id(node)] = name
            self.values[name[:len(name) - len(self.local)]] = node.attrs["value"].array
        return name


def _present(nodes):
    return [n for n in nodes if n is not None]


def _tuple(names):
    return ", ".join(names) + ","


def _assign(targets, values):
    if len(targets) == 1:
        return f"{targets[0]} = {values[0]}"
    return f"{_tuple(targets)} = {_tuple(values)}"


def _loop(scan, name, state, start, body, new, saves, restores, steps):
    """Lines running ``body`` ``steps`` times on the variables ``state`` (starting from
    the expressions ``start``), which become ``new`` after each step: forward (``saves``:
    the names whose values each step appends to the lists ``_ls<j>``) or backward over
    those lists in reverse (``restores``: the names each step reads its saved values
    into). A Python loop, or for a backend that traces loops away (JAX under jit)
    ``jax.lax.scan`` through ``_scan``, which compiles the body once (its saved values
    are the stacked outputs ``_ls``). A list per saved value rather than one of tuples:
    floats and arrays are not tracked by Python's garbage collector, tuples are, and a
    thousand kept per call set off collections that walk every live object."""
    if not state:
        return []
    lines = [_assign(state, start)]
    if scan:
        lines.append(f"def {name}(_lstate, _lx):")
        lines.append(f"    {_tuple(state)} = _lstate")
        if restores:
            lines.append(f"    {_tuple(restores)} = _lx")
        lines += ["    " + line for line in body]
        out = f"({_tuple(saves)})" if saves else "None"
        lines.append(f"    return ({_tuple(new)}), {out}")
        if restores is None:
            target = "_ls" if saves else "_"
            lines.append(f"({_tuple(state)}), {target} = _scan({name}, ({_tuple(state)}), "
                         f"None, {steps})")
        else:
            lines.append(f"({_tuple(state)}), _ = _scan({name}, ({_tuple(state)}), _ls, "
                         f"{steps}, True)")
        return lines
    if saves:
        lines += [f"_ls{j} = []" for j in range(len(saves))]
        lines += [f"_la{j} = _ls{j}.append" for j in range(len(saves))]
        body = body + [f"_la{j}({n})" for j, n in enumerate(saves)]
    if restores and len(restores) == 1:
        lines.append(f"for {restores[0]} in reversed(_ls0):")
    elif restores:
        lists = ", ".join(f"reversed(_ls{j})" for j in range(len(restores)))
        lines.append(f"for {', '.join(restores)} in zip({lists}):")
    else:
        lines.append(f"for _lk in range({steps}):")
    lines += ["    " + line for line in body + [_assign(state, new)]]
    return lines


class RolledBody:
    """A rolled gradient as a function's body, for ``emit.function_source``."""

    def __init__(self, plan, outputs, zero_shapes, with_value, local=""):
        self.plan, self.outputs, self.zero_shapes = plan, outputs, zero_shapes
        self.with_value = with_value
        self.arrays = _ArrayNames(local)
        p = plan
        carry = {id(s): f"_lc{j}" for j, s in enumerate(p.carry_in)}
        carry.update({id(s): f"_lc{j}" for j, s in enumerate(p.finals)})
        cot = {id(s): f"_lg{j}" for j, s in enumerate(p.cot_out) if s is not None}
        cot.update({id(s): f"_lg{j}" for j, s in enumerate(p.cot_inits) if s is not None})
        cot.update({id(s): f"_lv{j}" for j, s in enumerate(p.cot_outside)})

        head = self._program(list(p.inits) + list(p.invariants), "_t", {})
        invariant = {id(s): head.names[id(n)] for s, n in zip(p.invariant_symbols,
                                                               p.invariants)}
        known = dict(head.names)
        forward = self._program(list(p.carry_out) + list(p.residuals), "_f",
                                {**known, **carry, **invariant})
        tail_targets = _present(p.cot_finals) + _present(p.tail_grads)
        if with_value is not None:
            tail_targets.append(with_value)
        tail = self._program(tail_targets, "_b", {**known, **carry})
        # the backward loop reads the saved carries under names of its own: _lc<j> hold
        # the last carries, which the tail and the head's VJP read after it
        restored = {id(s): f"_lr{j}" for j, s in enumerate(p.carry_in)}
        self.restored = [restored.get(id(r), forward.names[id(r)]) for r in p.residuals]
        backward = self._program(_present(p.cot_in) + _present(p.cot_contributions), "_r",
                                 {**known, **cot, **invariant,
                                  **{id(r): n for r, n in zip(p.residuals, self.restored)}})
        outputs_present = _present(outputs)
        grads = self._program(outputs_present, "_h", {**known, **tail.names, **cot})
        self.programs = [head, forward, tail, backward, grads]
        self.targets = {id(head): list(p.inits) + list(p.invariants),
                        id(forward): list(p.carry_out) + list(p.residuals),
                        id(tail): tail_targets,
                        id(backward): _present(p.cot_in) + _present(p.cot_contributions),
                        id(grads): outputs_present}
        self.statements = [s for prog in self.programs for s in prog.statements]
        # The NumPy lines of a scalar program can be its math lines with math. replaced
        # (emit._translated_body) unless the loops' own lines hold a constant or a zero,
        # which the math backend writes as a Python float (1.0[()] in NumPy's return).
        floats = [j for j, c in enumerate(p.cot_out) if c is not None]
        glue = list(p.inits) + [p.cot_finals[j] for j in floats] + [
            p.cot_in[j] for j in floats] + list(p.cot_contributions)
        self.translatable = all(n is not None and not n.is_const for n in glue)

    def _program(self, targets, prefix, known):
        return Program(_present(targets), self.plan.inputs, prefix=prefix,
                       array_name=self.arrays, input_name=lambda x: code_name(x.name),
                       known=known)

    def _needed(self):
        """{id(program): names of its statements that other parts or the return read}."""
        own = {id(prog): {name for name, _, _ in prog.statements} for prog in self.programs}
        read = {id(prog): set() for prog in self.programs}
        for prog in self.programs:
            for _, _, operands in prog.statements:
                for n in operands:
                    if n is not None:
                        read[id(prog)].add(n)
        needed = {}
        for prog in self.programs:
            others = set()
            for other in self.programs:
                if other is not prog:
                    others |= read[id(other)]
            for node in self.targets[id(prog)]:
                name = prog.names.get(id(node))
                if name is not None:
                    others.add(name)
            for node in _present(self.outputs) + _present([self.with_value]):
                for q in self.programs:
                    if id(node) in q.names:
                        others.add(q.names[id(node)])
            needed[id(prog)] = own[id(prog)] & others
        return needed

    def lines(self, backend, preamble, args=(), used=None):
        """The body's lines for ``backend``, the last one returning the results. Each
        part's values are read by the names its ``Program`` gave them (``prog.names``):
        a result that ``statement_lines`` accumulated in another buffer is bound to its
        own name after the part."""
        p = self.plan
        printer = backend.templates.printer
        needed = self._needed()

        def emit(prog):
            results = [node for name, node, _ in prog.statements if name in needed[id(prog)]]
            lines, name_of = statement_lines(prog, results, backend, preamble, used)
            for node in results:
                name, now = prog.names[id(node)], name_of(node)
                if now != name:
                    lines.append(f"{name} = {now}")
            return lines

        def code(prog, node, shape=()):
            if node is None:
                return backend.zeros(shape)
            if node.is_const and not node.shape:   # a float of the backend's own
                return backend.scalar_output(node.attrs["value"], printer)
            return prog.names[id(node)]

        head, forward, tail, backward, grads = self.programs
        scan = getattr(backend, "loop_style", "python") == "scan"
        if scan:
            preamble["_scan"] = backend.scan_helper
        out = emit(head)
        carries = [f"_lc{j}" for j in range(len(p.carry_out))]
        saved = [forward.names[id(r)] for r in p.residuals]
        inits = [code(head, init) for init in p.inits]
        new = [code(forward, c) for c in p.carry_out]
        out += _loop(scan, "_lfwd", carries, inits, emit(forward), new, saved, None,
                     p.steps)
        out += emit(tail)
        floats = [j for j, c in enumerate(p.cot_out) if c is not None]
        state = [f"_lg{j}" for j in floats] + [f"_lv{j}" for j in range(len(p.cot_targets))]
        start = [code(tail, p.cot_finals[j], p.finals[j].shape) for j in floats]
        start += [backend.zeros(t.shape) for t in p.cot_targets]
        body = emit(backward)
        new = [code(backward, p.cot_in[j], p.carry_in[j].shape) for j in floats]
        new += [f"_lv{j}" if c is None else f"_lv{j} + {code(backward, c)}"
                for j, c in enumerate(p.cot_contributions)]
        out += _loop(scan, "_lbwd", state, start, body, new, None,
                     self.restored if saved else None, p.steps)
        out += emit(grads)
        out.append(self.return_line(backend, args))
        return out

    def return_line(self, backend, args):
        """The return line of the last ``lines`` (for the same program in ``backend``)."""
        names = self.programs[-1].names
        result = results_code(self.outputs, self.zero_shapes, self.with_value,
                              lambda node: names[id(node)], backend,
                              backend.templates.printer, _ids_memo(self.plan.inputs))
        return f"return {backend.result(result, args)}"


def rolled_source(plan, backend, func_name="gradient", with_value=None, zero_shapes=None,
                  standalone=True, lazy_fallback=False):
    """(source, arrays) of the function computing ``plan.grads`` (see the module
    docstring), as ``emit.build_source`` gives for a straight-line program."""
    if isinstance(backend, str):
        backend = backend_named(backend)
    if hasattr(backend, "compile_function"):
        raise ArgumentError(f"the {backend.name} backend builds native code, not standalone "
                            "Python source; compiled functions carry their C as "
                            "fn.__symgrad_c_source__, and source('numpy') gives the Python")
    outputs = list(plan.grads)
    zero_shapes = checked_zero_shapes(outputs, zero_shapes)
    body = RolledBody(plan, outputs, zero_shapes, with_value,
                      "_" if backend.arrays_on_entry else "")
    if backend.name in PIPELINES:
        return PIPELINES[backend.name].source(backend, emit, body, func_name,
                                              with_value), {}
    arrays = body.arrays.values
    return function_source(body, plan.inputs, backend, func_name, arrays, standalone,
                           lazy_fallback), arrays


@gc_paused
def compile_rolled(plan, backend, func_name="gradient", with_value=None, zero_shapes=None):
    """The compiled function of ``plan`` for ``backend`` (one that ``rolls`` it)."""
    target = backend_named(backend)
    outputs = list(plan.grads)
    zero_shapes = checked_zero_shapes(outputs, zero_shapes)
    body = RolledBody(plan, outputs, zero_shapes, with_value,
                      "_" if target.arrays_on_entry else "")
    if target.name in PIPELINES:               # a backend with a pipeline of its own
        fn = PIPELINES[target.name].compile(target, emit, body, func_name, with_value)
        return fn if fn is not None else compile_rolled(plan, "numpy", func_name,
                                                         with_value, zero_shapes)
    if hasattr(target, "compile_rolled"):      # a backend that builds native code
        return target.compile_rolled(emit, body, func_name, with_value, zero_shapes)
    if target.blas_threads and any(node.shape for _, node, _ in body.statements):
        threads.configure()
        heap.configure()
    src = function_source(body, plan.inputs, target, func_name, body.arrays.values,
                          standalone=False, lazy_fallback=True)
    return load(src, body.arrays.values, target, func_name)
