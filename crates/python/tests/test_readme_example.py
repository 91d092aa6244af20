"""The README's five-line example runs as written and prints what it promises."""

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_readme_example_runs():
    text = README.read_text()
    section = text[text.index("**Python**"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) == 5, code
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    lines = out.getvalue().splitlines()
    assert len(lines) == 4, lines
    assert all(" can " in line for line in lines[:3]), lines
    # The animals in ConceptNet-100K (`gpsense query --count 'SELECT * WHERE { ?x IsA animal }'`).
    assert int(lines[3]) == 112, lines
