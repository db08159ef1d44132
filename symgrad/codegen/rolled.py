"""Code for a rolled gradient (``core.loops.RolledGradient``, built by ``diff.rolled``):
the function computes the head, runs the loop's body ``steps`` times saving the values its
VJP reads, computes the tail and its VJP, runs the body's VJP ``steps`` times in reverse
order, then the head's VJP. Each of the five parts is a ``Program`` printed by
``emit.statement_lines``; a later part reads what an earlier one computed by its name
(``Program(known=...)``), so nothing is computed twice. The argument checks, the ``math``
fast path with its NumPy fallback and the error translation are ``emit``'s, as for any
function; the code is as long as one copy of the body, whatever the number of steps.

Names: the loop's carries live in ``_lc<j>``, the cotangents of the carries in ``_lg<j>``
and of the invariants in ``_lv<j>``, the saved values in the list ``_ls``; generated
names start with one underscore and no user name is written so (``core.names``).
"""
from ..core.build import gc_paused
from ..core.program import Program
from . import heap, threads
from .backends import backend as backend_named
from .compile import load
from .emit import (_ids_memo, checked_zero_shapes, function_source, results_code,
                   statement_lines)
from .names import code_name


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


class RolledBody:
    """A rolled gradient as a function's body, for ``emit.function_source``."""

    translatable = True    # the loops' own lines read the same for math and NumPy

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
        saved = {id(r): forward.names[id(r)] for r in p.residuals}
        backward = self._program(_present(p.cot_in) + _present(p.cot_contributions), "_r",
                                 {**known, **cot, **invariant, **saved})
        outputs_present = _present(outputs)
        grads = self._program(outputs_present, "_h", {**known, **tail.names, **cot})
        self.programs = [head, forward, tail, backward, grads]
        self.targets = {id(head): list(p.inits) + list(p.invariants),
                        id(forward): list(p.carry_out) + list(p.residuals),
                        id(tail): tail_targets,
                        id(backward): _present(p.cot_in) + _present(p.cot_contributions),
                        id(grads): outputs_present}
        self.statements = [s for prog in self.programs for s in prog.statements]

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
        """The body's lines for ``backend``, the last one returning the results."""
        p = self.plan
        printer = backend.templates.printer
        needed = self._needed()
        names = {}      # id(node) -> name after its program ran (aliases resolved)

        def emit(prog):
            results = [node for name, node, _ in prog.statements if name in needed[id(prog)]]
            lines, name_of = statement_lines(prog, results, backend, preamble, used)
            for node in results:
                name, now = prog.names[id(node)], name_of(node)
                if now != name:          # an accumulated buffer: readers use the name
                    lines.append(f"{name} = {now}")
                names[id(node)] = name
            for nid, name in prog.names.items():
                names.setdefault(nid, name)
            return lines

        def code(node, shape=()):
            if node is None:
                return backend.zeros(shape)
            if node.is_const and not node.shape:
                return printer.doprint(node.attrs["value"])
            return names[id(node)]

        head, forward, tail, backward, grads = self.programs
        out = emit(head)
        for j, init in enumerate(p.inits):
            out.append(f"_lc{j} = {code(init)}")
        body = emit(forward)
        saved = [names[id(r)] for r in p.residuals]
        loop = [f"for _lk in range({p.steps}):"]
        if saved:
            out.append("_ls = []")
            body.append(f"_ls.append(({', '.join(saved)},))")
        carries = [f"_lc{j}" for j in range(len(p.carry_out))]
        body.append(f"{', '.join(carries)}, = "
                    + ", ".join(code(c) for c in p.carry_out) + ",")
        out += loop + ["    " + line for line in body]
        out += emit(tail)
        for j, (cot, final) in enumerate(zip(p.cot_finals, p.finals)):
            if p.cot_out[j] is not None:
                out.append(f"_lg{j} = {code(cot, final.shape)}")
        for j, target in enumerate(p.cot_targets):
            out.append(f"_lv{j} = {backend.zeros(target.shape)}")
        body = emit(backward)
        for j, c in enumerate(p.cot_contributions):
            if c is not None:
                body.append(f"_lv{j} = _lv{j} + {code(c)}")
        floats = [j for j, c in enumerate(p.cot_out) if c is not None]
        if floats:
            body.append(", ".join(f"_lg{j}" for j in floats) + ", = "
                        + ", ".join(code(p.cot_in[j], p.carry_in[j].shape) for j in floats)
                        + ",")
        if saved:
            loop = [f"for ({', '.join(saved)},) in reversed(_ls):"]
        out += loop + ["    " + line for line in body]
        out += emit(grads)
        self._names = names
        out.append(self.return_line(backend, args))
        return out

    def return_line(self, backend, args):
        """The return line of the last ``lines`` (for the same program in ``backend``)."""
        names = self._names
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
    outputs = list(plan.grads)
    zero_shapes = checked_zero_shapes(outputs, zero_shapes)
    body = RolledBody(plan, outputs, zero_shapes, with_value,
                      "_" if backend.arrays_on_entry else "")
    arrays = body.arrays.values
    return function_source(body, plan.inputs, backend, func_name, arrays, standalone,
                           lazy_fallback), arrays


@gc_paused
def compile_rolled(plan, backend, func_name="gradient", with_value=None, zero_shapes=None):
    """The compiled function of ``plan`` for ``backend`` (one whose ``rolls_loops``)."""
    target = backend_named(backend)
    if target.blas_threads:
        threads.configure()
        heap.configure()
    src, arrays = rolled_source(plan, target, func_name, with_value, zero_shapes,
                                standalone=False, lazy_fallback=True)
    return load(src, arrays, target, func_name)
