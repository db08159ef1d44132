"""The rule table as data (``sg.rules``) and the loader's defences.

Rule formulas are parsed with ``ast`` against a whitelist; anything else is a
``RuleError`` naming the file and the line, and nothing in a rule file is ever executed.
"""
import re
from pathlib import Path

import pytest

import symgrad as sg
from symgrad.diff.formula import Formula
from symgrad.diff import rules as rules_module
from symgrad.diff.rules import RuleTable, rules_dir

ROOT = Path(__file__).resolve().parent.parent

MUL_OK = """\
- op: mul(x, y)
  x: grad * y
  y: grad * x
  jvp: x_t * y + x * y_t
"""


# ----- the table -------------------------------------------------------------------------

def test_mul_rule_as_data():
    r = sg.rules["mul"]
    assert isinstance(r, sg.Rule)
    assert r.name == "mul"
    assert r.inputs == ("x", "y")
    assert r.formula_text("x") == "grad * y"
    assert r.formula_text("y") == "grad * x"
    assert r.jvp.text == "x_t * y + x * y_t"
    assert r.signature == "mul(x, y)"


def test_rule_source_is_file_and_line():
    r = sg.rules["mul"]
    file, line = r.source.rsplit(":", 1)
    assert file == "rules/pointwise.yaml"
    lines = (ROOT / file).read_text().splitlines()
    assert lines[int(line) - 1].strip() == "- op: mul(x, y)"


def test_rule_repr_shows_everything():
    text = repr(sg.rules["mul"])
    for part in ("mul(x, y)", "rules/pointwise.yaml:", "x: grad * y", "y: grad * x",
                 "jvp: x_t * y + x * y_t"):
        assert part in text


def test_rule_has_outputs():
    assert sg.rules["mul"].outputs


def test_rule_with_parameters():
    r = sg.rules["sum"]
    assert r.inputs == ("x",)
    assert set(r.params) >= {"axis", "keepdims"}


def test_non_differentiable_inputs():
    r = sg.rules["gt"]
    assert not r.differentiable
    assert not r.input_differentiable(0)
    assert "non_differentiable" in r.formula_text("x")


def test_non_differentiable_formula_text_is_the_file_text():
    assert sg.rules["gt"].formula_text("x") == "non_differentiable"


def test_names_lists_every_op():
    names = sg.rules.names()
    assert names == sorted(names)
    for op in ("add", "mul", "matmul", "tanh", "sum", "transpose", "where"):
        assert op in names
        assert op in sg.rules
    assert len(sg.rules) == len(names)
    assert {r.name for r in sg.rules} == set(names)


def test_unknown_rule_lookup():
    with pytest.raises(KeyError, match="no rule for op 'frobnicate'"):
        sg.rules["frobnicate"]
    assert sg.rules.get("frobnicate") is None


def test_every_formula_is_parsed_text():
    """Each rule carries its formulas as text and parsed closures, never code objects."""
    for r in sg.rules:
        for inp in r.inputs:
            v = r.vjp[inp]
            if isinstance(v, Formula):
                assert v.text and v.names <= set(r.inputs) | set(r.params) | {"grad", "result"}
        if r.jvp is not None:
            assert isinstance(r.jvp, Formula)


def test_rules_dir_holds_the_shipped_files():
    folder = rules_dir()
    assert sorted(p.name for p in folder.glob("*.yaml")) == sorted(
        p.name for p in (ROOT / "rules").glob("*.yaml"))


# ----- valid custom rules ----------------------------------------------------------------

def test_valid_rule_text_parses():
    table = RuleTable()
    (r,) = table.load_text(MUL_OK, "mine.yaml")
    assert table.names() == ["mul"]
    assert r.source == "mine.yaml:1"
    assert r.formula_text("x") == "grad * y"


def test_parsed_rule_builds_graph_nodes():
    (r,) = RuleTable().load_text(MUL_OK, "mine.yaml")
    x, y, g = sg.symbol("x", (3,)), sg.symbol("y", (3,)), sg.symbol("g", (3,))
    node = x * y
    assert r.apply_vjp(node, 0, g) is g * y            # structural hashing: the same node
    assert r.apply_vjp(node, 1, g) is g * x


def test_rule_with_parameters_non_differentiable_and_helpers():
    text = """\
# a comment
- op: clamp(x, *, min=None, max=None)
  x: where((x >= min) & (x <= max), grad, 0)
  jvp: where((x >= min) & (x <= max), x_t, 0)

- op: sign(x)
  x: non_differentiable

- op: erf(x)
  x: not_implemented("just testing")
  jvp: x_t
"""
    rules = RuleTable().load_text(text, "custom.yaml")
    assert [r.name for r in rules] == ["clamp", "sign", "erf"]
    assert rules[0].params == {"min": None, "max": None}
    assert rules[0].source == "custom.yaml:2" and rules[1].source == "custom.yaml:6"
    assert not rules[1].differentiable
    with pytest.raises(sg.NotDifferentiableError, match="just testing"):
        rules[2].apply_vjp(sg.erf(sg.symbol("x")), 0, sg.symbol("g"))


def test_empty_file_has_no_rules():
    assert RuleTable().load_text("# nothing here\n", "empty.yaml") == []


# ----- hostile and broken rule files -----------------------------------------------------

def bad_mul(x_formula, y_formula="grad * x", jvp="x_t * y + x * y_t"):
    """A mul rule whose x formula (line 2) is ``x_formula``."""
    return f"- op: mul(x, y)\n  x: {x_formula}\n  y: {y_formula}\n  jvp: {jvp}\n"


BAD = {
    "syntax_error": (bad_mul("grad *"), 2, ["syntax error", "grad *"]),
    "forbidden_name": (bad_mul("grad * os"), 2, ["name 'os' is not allowed"]),
    "attribute": (bad_mul("grad.shape"), 2, ["Attribute", "not allowed"]),
    "attribute_call": (bad_mul("grad.sum()"), 2, ["no attributes"]),
    "lambda": (bad_mul('"lambda: grad"'), 2, ["'Lambda' is not allowed"]),
    "lambda_call": (bad_mul('"(lambda g: g)(grad)"'), 2, ["only plain function names"]),
    "dunder_import": (bad_mul("__import__('os')"), 2, ["__import__"]),
    "dunder_name": (bad_mul("grad * __builtins__"), 2, ["__builtins__", "not allowed"]),
    "eval": (bad_mul("eval('1')"), 2, ["'eval' is not a symgrad op"]),
    "exec": (bad_mul("exec('1')"), 2, ["'exec' is not a symgrad op"]),
    "open": (bad_mul("open('/tmp/x', 'w')"), 2, ["'open' is not a symgrad op"]),
    "getattr": (bad_mul("getattr(grad, 'shape')"), 2, ["'getattr' is not a symgrad op"]),
    "string_literal": (bad_mul("grad * 'a'"), 2, ["literal 'a' is not allowed"]),
    "bytes_literal": (bad_mul("grad * b'a'"), 2, ["literal b'a' is not allowed"]),
    "fstring": (bad_mul("f'{grad}'"), 2, ["JoinedStr"]),
    "subscript": (bad_mul("grad[0]"), 2, ["Subscript"]),
    "comprehension": (bad_mul('"[g for g in grad]"'), 2, ["ListComp"]),
    "walrus": (bad_mul("(z := grad)"), 2, ["NamedExpr"]),
    "starred_kwargs": (bad_mul("sum(grad, **y)"), 2, ["**kwargs"]),
    "function_as_value": (bad_mul("grad * sin"), 2, ["'sin' is a function; call it"]),
    "grad_in_jvp": (bad_mul("grad * y", jvp="grad"), 4, ["name 'grad' is not allowed"]),
    "tangent_in_vjp": (bad_mul("grad * y_t"), 2, ["name 'y_t' is not allowed"]),
    "unknown_op": ("- op: frobnicate(x, y)\n  x: grad\n  y: grad\n  jvp: x_t\n", 1,
                   ["unknown op 'frobnicate'", "symgrad/core/ops/"]),
    "wrong_arity": ("- op: mul(x)\n  x: grad\n  jvp: x_t\n", 1,
                    ["mul takes 2 inputs", "declares 1"]),
    "wrong_input_names": ("- op: mul(a, b)\n  a: grad * b\n  b: grad * a\n  jvp: a_t\n", 1,
                          ["mul takes the inputs (x, y)", "declares (a, b)"]),
    "missing_formula": ("- op: mul(x, y)\n  x: grad * y\n  jvp: x_t * y\n", 1,
                        ["no gradient formula for y", "non_differentiable"]),
    "missing_jvp": ("- op: mul(x, y)\n  x: grad * y\n  y: grad * x\n", 1,
                    ["missing 'jvp'"]),
    "unknown_key": (bad_mul("grad * y") + "  z: grad\n", 5, ["'z' is neither an input"]),
    "duplicate_key": ("- op: mul(x, y)\n  x: grad * y\n  x: grad\n  y: grad * x\n"
                      "  jvp: x_t * y\n", 3, ["duplicate key 'x'"]),
    "bad_signature": ("- op: mul(x, y\n  x: grad\n", 1, ["signature"]),
    "star_args_signature": ("- op: mul(*xs)\n  xs: grad\n  jvp: xs_t\n", 1,
                            ["inputs are plain names"]),
    "no_op_key": ("- x: grad\n", 1, ["without an 'op'"]),
    "not_a_list": ("op: mul(x, y)\n", 1, ["list of rules"]),
    "not_a_mapping": ("- mul\n", 1, ["mapping"]),
    "bad_yaml": ("- op: mul(x, y)\n  x: [grad\n", 3, ["not valid YAML"]),
    "bad_not_implemented": (bad_mul("not_implemented(grad)"), 2, ["not_implemented"]),
    "python_yaml_tag": ("- op: !!python/object/apply:os.system ['touch /tmp/x']\n", 1,
                        ["key: formula"]),
}


@pytest.mark.parametrize("text, line, words", BAD.values(), ids=list(BAD))
def test_bad_rule_names_file_and_line(text, line, words):
    with pytest.raises(sg.RuleError) as info:
        RuleTable().load_text(text, "bad.yaml")
    msg = str(info.value)
    assert msg.startswith(f"bad.yaml:{line}: "), msg
    for w in words:
        assert w in msg, msg


def test_duplicate_rule_across_files():
    table = RuleTable()
    table.load_text(MUL_OK, "a.yaml")
    with pytest.raises(sg.RuleError, match=r"^b\.yaml:1: duplicate rule for mul "
                                           r"\(first at a\.yaml:1\)"):
        table.load_text(MUL_OK, "b.yaml")
    assert table["mul"].source == "a.yaml:1"


def test_duplicate_rule_in_one_file():
    with pytest.raises(sg.RuleError, match=r"^bad\.yaml:5: duplicate rule for mul"):
        RuleTable().load_text(MUL_OK + MUL_OK, "bad.yaml")


def test_a_failed_file_adds_no_rules():
    table = RuleTable()
    with pytest.raises(sg.RuleError):
        table.load_text(MUL_OK + bad_mul("grad.shape").replace("mul", "add", 1), "bad.yaml")
    assert len(table) == 0


def test_rule_error_is_a_syntax_error():
    assert issubclass(sg.RuleError, SyntaxError)


# ----- nothing in a rule file is ever executed --------------------------------------------

def hostile_formulas(marker):
    """Formulas that would create ``marker`` if anything evaluated them."""
    p = str(marker)
    return [
        f"open('{p}', 'w')",
        f"__import__('pathlib').Path('{p}').touch()",
        f"eval(\"open('{p}', 'w')\")",
        f"exec(\"open('{p}', 'w')\")",
        f"(lambda: open('{p}', 'w'))()",
        f"[open('{p}', 'w') for _ in (1,)]",
        f"grad.__class__.__init__.__globals__['open']('{p}', 'w')",
        f"sympify(\"open('{p}', 'w')\")",
    ]


@pytest.mark.parametrize("i", range(8))
def test_hostile_formula_is_rejected_and_never_run(tmp_path, i):
    marker = tmp_path / "pwned"
    formula = hostile_formulas(marker)[i]
    quoted = '"' + formula.replace("\\", "\\\\").replace('"', '\\"') + '"'
    for text in (bad_mul(quoted), bad_mul("grad * y", jvp=quoted)):
        with pytest.raises(sg.RuleError, match=r"^bad\.yaml:\d+: "):
            RuleTable().load_text(text, "bad.yaml")
    assert not marker.exists()


def test_yaml_tags_are_not_constructed(tmp_path):
    marker = tmp_path / "pwned"
    text = (f"- op: mul(x, y)\n  x: !!python/object/apply:os.system ['touch {marker}']\n"
            f"  y: grad * x\n  jvp: x_t\n")
    with pytest.raises(sg.RuleError, match=r"^bad\.yaml:2: "):
        RuleTable().load_text(text, "bad.yaml")
    assert not marker.exists()


def test_loader_never_calls_eval_or_exec():
    """The loader's source has no eval/exec/sympify call and no unsafe YAML loading:
    formulas become closures over symgrad ops."""
    for module in ("rules.py", "formula.py"):
        src = (ROOT / "symgrad" / "diff" / module).read_text()
        assert not re.search(r"(?<![\w.])(eval|exec|sympify)\(", src)
        assert "yaml.load(" not in src and "unsafe" not in src.lower()


# ----- the composed rule files kept on disk ------------------------------------------------

def _table_from(folder):
    table = RuleTable()
    table.load_dir(folder)
    return table


def test_composed_rules_are_reused_only_for_the_same_text(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "mul.yaml").write_text(MUL_OK)
    composed = []
    real = rules_module.compose_rules
    monkeypatch.setattr(rules_module, "compose_rules",
                        lambda text, file: composed.append(file) or real(text, file))
    assert _table_from(folder)["mul"].vjp["x"].text == "grad * y"
    assert len(composed) == 1
    assert _table_from(folder)["mul"].vjp["x"].text == "grad * y"
    assert len(composed) == 1                       # read from the cache
    (folder / "mul.yaml").write_text(MUL_OK.replace("grad * y", "y * grad"))
    assert _table_from(folder)["mul"].vjp["x"].text == "y * grad"
    assert len(composed) == 2                       # the text changed: composed again


@pytest.mark.parametrize("damage", ["not json", "[]", '{"%s": [1, 2]}',
                                    '{"%s": ["%s", [[{"op": ["mul(x, y)", "1"]}, 1]]]}',
                                    '{"%s": ["%s", [[{"op": "mul(x, y)"}, 1]]]}'])
def test_a_damaged_cache_is_composed_again(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "rules"
    folder.mkdir()
    path = folder / "mul.yaml"
    path.write_text(MUL_OK)
    _table_from(folder)
    cache = tmp_path / "cache" / "rules" / rules_module.ComposedRules.NAME
    assert cache.is_file()
    key = str(path.resolve())
    cache.write_text(damage.replace("%s", key, 1).replace("%s", MUL_OK.replace("\n", "\\n"), 1))
    table = _table_from(folder)
    assert table["mul"].vjp["y"].text == "grad * x"
    assert table["mul"].source == f"{path}:1"


def test_a_bad_file_names_its_line_with_a_cache_present(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "mul.yaml").write_text(MUL_OK)
    _table_from(folder)
    (folder / "mul.yaml").write_text("- op: mul(x, y)\n  x: [grad\n")
    with pytest.raises(sg.RuleError, match=r"mul\.yaml:3: not valid YAML"):
        _table_from(folder)


def test_an_unwritable_cache_still_loads(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SYMGRAD_CACHE", str(blocker / "below"))
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "mul.yaml").write_text(MUL_OK)
    assert _table_from(folder)["mul"].jvp is not None


def test_a_checked_files_formulas_compile_on_first_use(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "rules"
    folder.mkdir()
    (folder / "mul.yaml").write_text(MUL_OK)
    first = _table_from(folder)["mul"].vjp["x"]
    assert first._fn is not None                     # checked now, compiled at load
    later = _table_from(folder)["mul"]
    assert later.vjp["x"]._fn is None and later.jvp._fn is None
    x, y = sg.symbol("x", ()), sg.symbol("y", ())
    assert later.vjp["x"]({"x": x, "y": y, "grad": x, "result": x * y}) is x * y
    assert later.vjp["x"]._fn is not None and later.vjp["x"].names == {"grad", "y"}


def test_a_cache_that_calls_a_bad_file_checked_still_names_the_line(tmp_path, monkeypatch):
    import json
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "rules"
    folder.mkdir()
    path = folder / "mul.yaml"
    bad = MUL_OK.replace("grad * y", "grad.shape")
    path.write_text(bad)
    cache = tmp_path / "cache" / "rules" / rules_module.ComposedRules.NAME
    with pytest.raises(sg.RuleError, match=r"mul\.yaml:2: "):
        _table_from(folder)
    files = json.loads(cache.read_text())
    assert files[str(path.resolve())][2] is False
    files[str(path.resolve())][2] = True             # a tampered cache
    cache.write_text(json.dumps(files))
    rule = _table_from(folder)["mul"]
    with pytest.raises(sg.RuleError, match=r"mul\.yaml:2: "):
        rule.vjp["x"]({})


def test_the_shipped_rule_files_are_read_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGRAD_CACHE", str(tmp_path / "cache"))
    RuleTable(rules_dir(), display="rules")._rules
    composed = []
    real = rules_module.compose_rules
    monkeypatch.setattr(rules_module, "compose_rules",
                        lambda text, file: composed.append(file) or real(text, file))
    table = RuleTable(rules_dir(), display="rules")
    assert len(table) == len(sg.rules) and composed == []
