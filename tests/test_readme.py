"""README.md cannot rot: its ```python blocks run in order in one namespace, as a reader
pasting them would run them, and where a ```text block follows one it is exactly what
that block prints."""
import contextlib
import io
import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

README = Path(__file__).resolve().parent.parent / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def _blocks():
    text = README.read_text(encoding="utf-8")
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(text)]
    out = []
    for i, (lang, body, start, end) in enumerate(blocks):
        if lang != "python":
            continue
        expected = None
        if i + 1 < len(blocks) and blocks[i + 1][0] == "text" \
                and not text[end:blocks[i + 1][2]].strip():
            expected = blocks[i + 1][1]
        line = text.count("\n", 0, start) + 1
        out.append((line, body, expected))
    return out


def test_readme_has_examples():
    assert len(_blocks()) >= 8


def test_readme_python_blocks_run_and_print_what_they_say():
    namespace = {"__name__": "readme"}
    for line, body, expected in _blocks():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(body, f"README.md:{line}", "exec"), namespace)  # noqa: S102 - our own README
        if expected is not None:
            assert buf.getvalue().rstrip() == expected.rstrip(), f"README.md line {line}"
