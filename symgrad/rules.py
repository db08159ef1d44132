"""The rule table: per-op derivative formulas loaded from the YAML files in ``rules/``.

Each formula is parsed with ``ast`` and checked against a whitelist: names must be the
op's inputs and parameters, ``result``, ``grad`` (VJP) or ``<input>_t`` (JVP); calls must
name a symgrad op or a helper from ``rule_helpers``; only arithmetic, comparisons, calls,
tuples and number literals are allowed. Anything else is a ``RuleError`` naming the file
and line. Nothing is ever ``eval``-ed: an accepted formula is turned into a tree of small
closures that call symgrad ops, so applying a rule builds graph nodes.
"""
import ast
import operator
from pathlib import Path

import sympy
import yaml

from . import ops, rule_helpers
from .errors import NotDifferentiableError, RuleError
from .graph import const

NON_DIFFERENTIABLE = "non_differentiable"

BINOPS = {ast.Add: ops.add, ast.Sub: ops.sub, ast.Mult: ops.mul, ast.Div: ops.div,
          ast.Pow: ops.pow, ast.MatMult: ops.matmul, ast.BitAnd: ops.logical_and,
          ast.BitOr: ops.logical_or}
CMPOPS = {ast.Gt: ops.gt, ast.GtE: ops.ge, ast.Lt: ops.lt, ast.LtE: ops.le,
          ast.Eq: ops.eq, ast.NotEq: ops.ne}
CONSTANTS = {"pi": sympy.pi}


def formula_functions():
    """Every function a formula may call: symgrad's ops and the rule helpers."""
    fns = {name: ops.function_for(name) for name in ops.OPS
           if name not in ("symbol", "const", "array") and ops.function_for(name)}
    fns.update({name: getattr(rule_helpers, name) for name in rule_helpers.__all__})
    return fns


FUNCTIONS = formula_functions()


class Formula:
    """One parsed formula: its text, where it came from, and a closure evaluating it."""

    def __init__(self, text, fn, names):
        self.text = text
        self.fn = fn
        self.names = names

    def __call__(self, env):
        return self.fn(env)

    def __repr__(self):
        return self.text


class NotImplementedGradient:
    def __init__(self, reason):
        self.reason = reason

    def __repr__(self):
        return f"not_implemented({self.reason!r})"


class Rule:
    """Derivative rules of one op: ``vjp[input]`` is a Formula, ``NON_DIFFERENTIABLE`` or
    ``NotImplementedGradient``; ``jvp`` is a Formula or None."""

    def __init__(self, name, inputs, params, vjp, jvp, file, line):
        self.name = name
        self.inputs = inputs
        self.params = params
        self.vjp = vjp
        self.jvp = jvp
        self.file = file
        self.line = line

    @property
    def source(self):
        return f"{self.file}:{self.line}"

    @property
    def outputs(self):
        """The op's outputs as formulas name them; every op has one, ``result``."""
        return ("result",)

    @property
    def vjp_text(self):
        """``{input: formula text}`` as written in the rule file."""
        return {inp: self.formula_text(inp) for inp in self.inputs}

    @property
    def jvp_text(self):
        return self.jvp.text if self.jvp is not None else None

    @property
    def signature(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({', '.join(self.inputs)}{', *, ' + params if params else ''})"

    @property
    def differentiable(self):
        """True when the op's output can carry a gradient."""
        return any(v is not NON_DIFFERENTIABLE for v in self.vjp.values())

    def input_differentiable(self, i):
        return self.vjp[self.inputs[i]] is not NON_DIFFERENTIABLE

    def formula_text(self, inp):
        v = self.vjp[inp]
        if isinstance(v, Formula):
            return v.text
        return v if isinstance(v, str) else repr(v)

    def _env(self, node):
        env = dict(zip(self.inputs, node.inputs))
        for k in self.params:
            env[k] = node.attrs.get(k)
        env["result"] = node
        return env

    def apply_vjp(self, node, i, grad):
        """The gradient contribution to input ``i`` of ``node`` given ``grad``."""
        entry = self.vjp[self.inputs[i]]
        if entry is NON_DIFFERENTIABLE:
            return None
        if isinstance(entry, NotImplementedGradient):
            raise NotDifferentiableError(
                f"the gradient of {self.name} w.r.t. its input '{self.inputs[i]}' is not "
                f"implemented: {entry.reason} (rule at {self.source})")
        env = self._env(node)
        env["grad"] = grad
        return entry(env)

    def apply_jvp(self, node, tangents):
        if self.jvp is None:
            if not self.differentiable:
                return None
            raise NotDifferentiableError(f"{self.name} has no forward-mode (jvp) rule "
                                         f"(rule at {self.source})")
        env = self._env(node)
        for name, t in zip(self.inputs, tangents):
            env[name + "_t"] = t
        return self.jvp(env)

    def __repr__(self):
        lines = [f"Rule {self.signature}  [{self.source}]"]
        for inp in self.inputs:
            lines.append(f"  {inp}: {self.formula_text(inp)}")
        if self.jvp is not None:
            lines.append(f"  jvp: {self.jvp.text}")
        return "\n".join(lines)


# ----- formula compiler ----------------------------------------------------------------

class _Compiler:
    """Turns a whitelisted ``ast`` expression into nested closures over an env dict."""

    def __init__(self, allowed, where):
        self.allowed = allowed
        self.where = where
        self.names = set()

    def fail(self, node, msg):
        file, line, op = self.where
        raise RuleError(f"{file}:{line}: rule {op}: {msg} "
                        f"(at column {getattr(node, 'col_offset', 0) + 1} of the formula)")

    def compile(self, node):
        method = getattr(self, "c_" + type(node).__name__, None)
        if method is None:
            self.fail(node, f"'{type(node).__name__}' is not allowed in a formula; use "
                            "arithmetic, comparisons, calls of symgrad ops and number literals")
        return method(node)

    def c_Expression(self, node):
        return self.compile(node.body)

    def c_Constant(self, node):
        v = node.value
        if isinstance(v, bool) or v is None or isinstance(v, (int, float)):
            return lambda env: v
        self.fail(node, f"literal {v!r} is not allowed; only numbers, True, False and None")

    def c_Name(self, node):
        name = node.id
        if name.startswith("_"):
            self.fail(node, f"name '{name}' is not allowed (no private or dunder names)")
        if name in CONSTANTS:
            value = CONSTANTS[name]
            return lambda env: const(value)
        if name in FUNCTIONS and name not in self.allowed:
            self.fail(node, f"'{name}' is a function; call it")
        if name not in self.allowed:
            self.fail(node, f"name '{name}' is not allowed; a formula may use "
                            f"{', '.join(sorted(self.allowed))}, pi, and calls of symgrad ops")
        self.names.add(name)
        return lambda env: env[name]

    def c_BinOp(self, node):
        fn = BINOPS.get(type(node.op))
        if fn is None:
            self.fail(node, f"operator {type(node.op).__name__} is not allowed")
        a, b = self.compile(node.left), self.compile(node.right)
        return lambda env: fn(a(env), b(env))

    def c_UnaryOp(self, node):
        x = self.compile(node.operand)
        if isinstance(node.op, ast.USub):
            return lambda env: ops.neg(x(env))
        if isinstance(node.op, ast.UAdd):
            return x
        if isinstance(node.op, ast.Invert):
            return lambda env: ops.logical_not(x(env))
        self.fail(node, f"operator {type(node.op).__name__} is not allowed; use ~ for not")

    def c_Compare(self, node):
        if len(node.ops) != 1:
            self.fail(node, "chained comparisons are not allowed; combine with &")
        fn = CMPOPS.get(type(node.ops[0]))
        if fn is None:
            self.fail(node, f"comparison {type(node.ops[0]).__name__} is not allowed")
        a, b = self.compile(node.left), self.compile(node.comparators[0])
        return lambda env: fn(a(env), b(env))

    def c_Tuple(self, node):
        items = [self.compile(e) for e in node.elts]
        return lambda env: tuple(i(env) for i in items)

    def c_Call(self, node):
        if not isinstance(node.func, ast.Name):
            self.fail(node, "only plain function names can be called (no attributes)")
        name = node.func.id
        if name.startswith("_") or name not in FUNCTIONS:
            self.fail(node, f"'{name}' is not a symgrad op or rule helper")
        fn = FUNCTIONS[name]
        args = [self.compile(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None or kw.arg.startswith("_"):
                self.fail(node, "**kwargs and private keyword names are not allowed")
            kwargs[kw.arg] = self.compile(kw.value)
        return lambda env: fn(*[a(env) for a in args],
                              **{k: v(env) for k, v in kwargs.items()})


def compile_formula(text, allowed, where):
    file, line, op = where
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise RuleError(f"{file}:{line}: rule {op}: syntax error in formula {text!r}: "
                        f"{e.msg}") from None
    c = _Compiler(allowed, where)
    fn = c.compile(tree)
    return Formula(text.strip(), fn, c.names)


# ----- loading -------------------------------------------------------------------------

def _parse_signature(text, where):
    file, line, _ = where
    try:
        fn = ast.parse(f"def {text.strip()}: pass").body[0]
    except SyntaxError:
        raise RuleError(f"{file}:{line}: op signature {text!r} is not of the form "
                        "name(input, ..., *, param=default)") from None
    a = fn.args
    if a.vararg or a.kwarg or a.posonlyargs or a.defaults:
        raise RuleError(f"{file}:{line}: op signature {text!r}: inputs are plain names; "
                        "parameters come after '*' with defaults")
    inputs = tuple(x.arg for x in a.args)
    params = {}
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        if default is None:
            params[arg.arg] = None
        elif isinstance(default, ast.Constant):
            params[arg.arg] = default.value
        elif isinstance(default, ast.UnaryOp) and isinstance(default.op, ast.USub) \
                and isinstance(default.operand, ast.Constant) \
                and isinstance(default.operand.value, (int, float)):
            params[arg.arg] = -default.operand.value
        else:
            raise RuleError(f"{file}:{line}: default of parameter {arg.arg} must be a literal")
    for name in inputs + tuple(params):
        if name.startswith("_") or name in ("grad", "result") or name.endswith("_t"):
            raise RuleError(f"{file}:{line}: '{name}' cannot name an input or parameter")
    return fn.name, inputs, params


def _entry(node, file):
    if not isinstance(node, yaml.MappingNode):
        raise RuleError(f"{file}:{node.start_mark.line + 1}: each rule is a mapping "
                        "with an 'op' key")
    fields = {}
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode) or not isinstance(v, yaml.ScalarNode):
            raise RuleError(f"{file}:{k.start_mark.line + 1}: rule fields are 'key: formula'")
        if k.value in fields:
            raise RuleError(f"{file}:{k.start_mark.line + 1}: duplicate key '{k.value}'")
        fields[k.value] = (v.value, v.start_mark.line + 1)
    return fields, node.start_mark.line + 1


def parse_rules(text, file):
    """Rules from one file's text; raises RuleError with file and line on any problem."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else "?"
        raise RuleError(f"{file}:{line}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if root is None:
        return []
    if not isinstance(root, yaml.SequenceNode):
        raise RuleError(f"{file}:1: a rule file is a list of rules ('- op: ...')")
    rules = []
    for item in root.value:
        fields, line = _entry(item, file)
        if "op" not in fields:
            raise RuleError(f"{file}:{line}: rule without an 'op' signature")
        sig, sig_line = fields.pop("op")
        name, inputs, params = _parse_signature(sig, (file, sig_line, sig))
        if name not in ops.OPS:
            raise RuleError(f"{file}:{sig_line}: rule for unknown op '{name}'; "
                            "define the op in symgrad/ops.py first")
        if len(inputs) != ops.OPS[name].arity:
            raise RuleError(f"{file}:{sig_line}: op {name} takes {ops.OPS[name].arity} "
                            f"inputs, the rule declares {len(inputs)}")
        vjp = {}
        jvp = None
        base = set(inputs) | set(params) | {"result"}
        for key, (text, fline) in fields.items():
            where = (file, fline, name)
            if key == "jvp":
                jvp = compile_formula(text, base | {i + "_t" for i in inputs}, where)
            elif key in inputs:
                if text.strip() == NON_DIFFERENTIABLE:
                    vjp[key] = NON_DIFFERENTIABLE
                elif text.strip().startswith("not_implemented"):
                    vjp[key] = _not_implemented(text, where)
                else:
                    vjp[key] = compile_formula(text, base | {"grad"}, where)
            else:
                raise RuleError(f"{file}:{fline}: rule {name}: '{key}' is neither an input "
                                f"({', '.join(inputs)}) nor 'jvp'")
        missing = [i for i in inputs if i not in vjp]
        if missing:
            raise RuleError(f"{file}:{sig_line}: rule {name}: no gradient formula for "
                            f"{', '.join(missing)} (write one, or non_differentiable)")
        rule = Rule(name, inputs, params, vjp, jvp, file, sig_line)
        if rule.differentiable and jvp is None:
            raise RuleError(f"{file}:{sig_line}: rule {name}: missing 'jvp' formula")
        rules.append(rule)
    return rules


def _not_implemented(text, where):
    file, line, op = where
    tree = ast.parse(text.strip(), mode="eval").body
    if (isinstance(tree, ast.Call) and len(tree.args) == 1 and not tree.keywords
            and isinstance(tree.args[0], ast.Constant) and isinstance(tree.args[0].value, str)):
        return NotImplementedGradient(tree.args[0].value)
    raise RuleError(f"{file}:{line}: rule {op}: write not_implemented(\"reason\")")


def rules_dir():
    """The folder of rule files: inside the installed package, or the checkout's rules/."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "rules_data", here.parent / "rules"):
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    try:
        from importlib.resources import files
        return Path(str(files("symgrad.rules_data")))
    except (ImportError, ModuleNotFoundError, TypeError):
        raise RuleError("symgrad's rule files were not found; reinstall symgrad") from None


class RuleTable:
    """``sg.rules``: every op symgrad can differentiate, by name."""

    def __init__(self):
        self._rules = {}

    def load_text(self, text, file="<string>"):
        new = parse_rules(text, file)
        seen = {}
        for r in new:
            if r.name in seen:
                raise RuleError(f"{file}:{r.line}: duplicate rule for {r.name} "
                                f"(first at {seen[r.name].source})")
            seen[r.name] = r
            if r.name in self._rules:
                old = self._rules[r.name]
                raise RuleError(f"{file}:{r.line}: duplicate rule for {r.name} "
                                f"(first at {old.source})")
        for r in new:
            self._rules[r.name] = r
        return new

    def load_file(self, path, display=None):
        path = Path(path)
        return self.load_text(path.read_text(), display or str(path))

    def load_dir(self, folder, display=None):
        for path in sorted(Path(folder).glob("*.yaml")):
            self.load_file(path, f"{display}/{path.name}" if display else None)

    def __getitem__(self, name):
        try:
            return self._rules[name]
        except KeyError:
            raise KeyError(f"no rule for op {name!r}; known ops: {', '.join(self.names())}") \
                from None

    def get(self, name):
        return self._rules.get(name)

    def __contains__(self, name):
        return name in self._rules

    def __iter__(self):
        return iter(self._rules.values())

    def __len__(self):
        return len(self._rules)

    def names(self):
        return sorted(self._rules)

    def __repr__(self):
        return f"<symgrad rule table: {len(self)} ops>"


rules = RuleTable()
rules.load_dir(rules_dir(), display="rules")
