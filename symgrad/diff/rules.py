"""The rule table: per-op derivative formulas loaded from the YAML files in ``rules/``.

Each rule names an op of the registry (``core.opdef.OPS``) with the op's own operand
names; its formulas are compiled by ``diff.formula``. A malformed rule, a rule for an
unknown op or one whose inputs differ from the op's is a ``RuleError`` naming the file
and line.
"""
import ast
from pathlib import Path
from typing import Any, Iterator, cast

from ..core.opdef import OPS
from ..errors import NotDifferentiableError, RuleError
from .formula import Formula, compile_formula, formula_functions

NON_DIFFERENTIABLE = "non_differentiable"


class NotImplementedGradient:
    def __init__(self, reason):
        self.reason = reason

    def __repr__(self):
        return f"not_implemented({self.reason!r})"


class Rule:
    """Derivative rules of one op: ``vjp[input]`` is a Formula, ``NON_DIFFERENTIABLE`` or
    ``NotImplementedGradient``; ``jvp`` is a Formula or None."""

    def __init__(self, name: str, inputs: tuple[str, ...], params: dict[str, Any],
                 vjp: dict[str, Any], jvp: Any, file: str, line: int) -> None:
        self.name = name
        self.inputs = inputs
        self.params = params
        self.vjp = vjp
        self.jvp = jvp
        self.file = file
        self.line = line

    @property
    def source(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def outputs(self) -> tuple[str, ...]:
        """The op's outputs as formulas name them; every op has one, ``result``."""
        return ("result",)

    @property
    def vjp_text(self) -> dict[str, str]:
        """``{input: formula text}`` as written in the rule file."""
        return {inp: self.formula_text(inp) for inp in self.inputs}

    @property
    def jvp_text(self) -> str | None:
        return self.jvp.text if self.jvp is not None else None

    @property
    def signature(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({', '.join(self.inputs)}{', *, ' + params if params else ''})"

    @property
    def differentiable(self) -> bool:
        """True when the op's output can carry a gradient."""
        return any(v is not NON_DIFFERENTIABLE for v in self.vjp.values())

    def input_differentiable(self, i: int) -> bool:
        return self.vjp[self.inputs[i]] is not NON_DIFFERENTIABLE

    def formula_text(self, inp: str) -> str:
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

    def apply_vjp(self, node: Any, i: int, grad: Any) -> Any:
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

    def apply_jvp(self, node: Any, tangents: Any) -> Any:
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


# ----- loading -------------------------------------------------------------------------

def _parse_signature(text, where):
    file, line, _ = where
    try:
        fn = cast(ast.FunctionDef, ast.parse(f"def {text.strip()}: pass").body[0])
    except SyntaxError:
        raise RuleError(f"{file}:{line}: op signature {text!r} is not of the form "
                        "name(input, ..., *, param=default)") from None
    a = fn.args
    if a.vararg or a.kwarg or a.posonlyargs or a.defaults:
        raise RuleError(f"{file}:{line}: op signature {text!r}: inputs are plain names; "
                        "parameters come after '*' with defaults")
    inputs = tuple(x.arg for x in a.args)
    params: dict[str, Any] = {}
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
    import yaml
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


def compose_rules(text, file):
    """One rule file's text as [(fields, line)], the fields of a rule as {key: (formula
    text, line)}; raises RuleError with file and line when it is not such a list."""
    import yaml   # here, not at import: the rule files are read on first use
    try:
        # libyaml's loader when PyYAML has it: the same nodes and line marks, ten times
        # faster than the pure-Python one
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else "?"
        raise RuleError(f"{file}:{line}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if root is None:
        return []
    if not isinstance(root, yaml.SequenceNode):
        raise RuleError(f"{file}:1: a rule file is a list of rules ('- op: ...')")
    return [_entry(item, file) for item in root.value]


def parse_rules(text, file, entries=None, functions=None, checked=False):
    """Rules from one file's text; raises RuleError with file and line on any problem.
    ``entries``: the text's ``compose_rules``, when known already; ``functions``: the
    ``formula_functions()``, when known already; ``checked``: this very text was parsed
    without error before, so its formulas are compiled on first use."""
    if entries is None:
        entries = compose_rules(text, file)
    rules, functions = [], functions or formula_functions()
    formula = Formula.deferred if checked else compile_formula
    for fields, line in entries:
        fields = dict(fields)
        if "op" not in fields:
            raise RuleError(f"{file}:{line}: rule without an 'op' signature")
        sig, sig_line = fields.pop("op")
        name, inputs, params = _parse_signature(sig, (file, sig_line, sig))
        if name not in OPS:
            raise RuleError(f"{file}:{sig_line}: rule for unknown op '{name}'; "
                            "define the op (a defop in symgrad/core/ops/) first")
        opdef = OPS[name]
        if len(inputs) != opdef.arity:
            raise RuleError(f"{file}:{sig_line}: op {name} takes {opdef.arity} "
                            f"inputs, the rule declares {len(inputs)}")
        if inputs != opdef.inputs:
            raise RuleError(f"{file}:{sig_line}: op {name} takes the inputs "
                            f"({', '.join(opdef.inputs)}), the rule declares "
                            f"({', '.join(inputs)}); use the op's names")
        vjp = {}
        jvp = None
        base = set(inputs) | set(params) | {"result"}
        for key, (text, fline) in fields.items():
            where = (file, fline, name)
            if key == "jvp":
                jvp = formula(text, base | {i + "_t" for i in inputs}, where, functions)
            elif key in inputs:
                if text.strip() == NON_DIFFERENTIABLE:
                    vjp[key] = NON_DIFFERENTIABLE
                elif text.strip().startswith("not_implemented"):
                    vjp[key] = _not_implemented(text, where)
                else:
                    vjp[key] = formula(text, base | {"grad"}, where, functions)
            else:
                raise RuleError(f"{file}:{fline}: rule {name}: '{key}' is neither an input "
                                f"({', '.join(inputs)}) nor 'jvp'")
        missing = [i for i in inputs if i not in vjp]
        if missing:
            raise RuleError(f"{file}:{sig_line}: rule {name}: no gradient formula for "
                            f"{', '.join(missing)} (write one, or non_differentiable)")
        rule = Rule(name, inputs, params, vjp, jvp, file, sig_line)
        if rule.differentiable and not opdef.differentiable:
            raise RuleError(f"{file}:{sig_line}: rule {name}: the op is declared not "
                            "differentiable (differentiable=False in its OpDef), yet the rule "
                            "gives a gradient formula")
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
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "rules_data", package.parent / "rules"):
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    try:
        from importlib.resources import files
        return Path(str(files("symgrad.rules_data")))
    except (ImportError, ModuleNotFoundError, TypeError):
        raise RuleError("symgrad's rule files were not found; reinstall symgrad") from None


class ComposedRules:
    """The composed YAML of rule files (``compose_rules``), kept on disk by each file's
    text, with whether that text was parsed without error: a fresh process then reads one
    JSON file instead of importing PyYAML and composing every rule file, and compiles a
    checked file's formulas on first use, together most of the first gradient function's
    fixed cost. An entry is used only for the very text it was made from, and only when
    it has the shape ``compose_rules`` returns; anything else is composed again. Like
    Python's ``__pycache__`` and Numba's cache, the folder is trusted not to be edited by
    someone else: what it says a text composes to is not composed again to check."""

    NAME = "composed-2.json"

    def __init__(self, path, files):
        self.path = path
        self.files = files
        self.dirty = False

    @classmethod
    def load(cls):
        import json
        import os
        from ..core.user_cache import cache_folder
        try:
            path = os.path.join(cache_folder("rules"), cls.NAME)
        except OSError:
            return cls(None, {})
        try:
            with open(path, encoding="utf-8") as f:
                files = json.load(f)
        except (OSError, ValueError):
            files = {}
        return cls(path, files if isinstance(files, dict) else {})

    def entries(self, key, text, file):
        """(entries, checked) of the file at ``key`` whose text is ``text``."""
        hit = self.files.get(key)
        if (isinstance(hit, list) and len(hit) == 3 and hit[0] == text
                and _well_formed(hit[1])):
            return hit[1], hit[2] is True
        entries = compose_rules(text, file)
        self.files[key] = [text, entries, False]
        self.dirty = True
        return entries, False

    def checked(self, key):
        """The file at ``key`` parsed without error."""
        if self.files[key][2] is not True:
            self.files[key][2] = True
            self.dirty = True

    def save(self):
        if not self.dirty or self.path is None:
            return
        import json
        import os
        from ..core.user_cache import write_atomically
        self.files = {k: v for k, v in self.files.items() if os.path.isfile(k)}
        try:
            write_atomically(self.path, json.dumps(self.files))
        except OSError:
            pass
        self.dirty = False


def _well_formed(entries):
    """``entries`` has the shape ``compose_rules`` gives (after a JSON round trip)."""
    if not isinstance(entries, list):
        return False
    for item in entries:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], dict)
                and type(item[1]) is int):
            return False
        for key, value in item[0].items():
            if not (isinstance(value, list) and len(value) == 2
                    and isinstance(value[0], str) and type(value[1]) is int):
                return False
    return True


class RuleTable:
    """``sg.rules``: every op symgrad can differentiate, by name. The package's rule
    files are read on first use (parsing them is a good part of ``import symgrad``)."""

    def __init__(self, folder: Any = None, display: Any = None) -> None:
        self._loaded: dict[str, Rule] = {}
        self._pending = (folder, display) if folder is not None else None

    @property
    def _rules(self) -> dict[str, Rule]:
        if self._pending is not None:
            folder, display = self._pending
            self._pending = None
            try:
                self.load_dir(folder, display)
            except BaseException:
                self._pending = (folder, display)
                raise
        return self._loaded

    def load_text(self, text: str, file: str = "<string>", entries: Any = None,
                  functions: Any = None, checked: bool = False) -> list[Rule]:
        new = parse_rules(text, file, entries, functions, checked)
        seen: dict[str, Rule] = {}
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

    def load_file(self, path: str | Path, display: str | None = None) -> list[Rule]:
        path = Path(path)
        return self.load_text(path.read_text(), display or str(path))

    def load_dir(self, folder: str | Path, display: str | None = None) -> None:
        composed, functions = ComposedRules.load(), formula_functions()
        try:
            for path in sorted(Path(folder).glob("*.yaml")):
                text = path.read_text()
                file = f"{display}/{path.name}" if display else str(path)
                key = str(path.resolve())
                entries, checked = composed.entries(key, text, file)
                self.load_text(text, file, entries, functions, checked)
                composed.checked(key)
        finally:
            composed.save()

    def __getitem__(self, name: str) -> Rule:
        try:
            return self._rules[name]
        except KeyError:
            raise KeyError(f"no rule for op {name!r}; known ops: {', '.join(self.names())}") \
                from None

    def get(self, name: str) -> Rule | None:
        return self._rules.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._rules

    def __iter__(self) -> Iterator[Rule]:
        return iter(self._rules.values())

    def __len__(self) -> int:
        return len(self._rules)

    def names(self) -> list[str]:
        return sorted(self._rules)

    def __repr__(self):
        return f"<symgrad rule table: {len(self)} ops>"


rules = RuleTable(rules_dir(), display="rules")
