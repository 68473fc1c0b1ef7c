"""Text the learner reads: no control characters hiding in the docs (a vertical tab where
``\\v`` of ``\\varepsilon`` was renders as "arepsilon"), and the GELU tail figures that
docs/derivations.md quotes are the ones float32 gives."""
import pathlib
import re

import numpy as np
import pytest

from tinyattn.ops.normal_cdf import normal_cdf_and_pdf

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Tab, newline and carriage return are text; every other C0 character and DEL is not.
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def text_files():
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    found += sorted((ROOT / "examples").rglob("*.py"))
    found += sorted((ROOT / "examples").rglob("*.ipynb"))
    return found


def control_characters(text):
    """(line, column, character) of every control character in ``text``."""
    hits = []
    for number, line in enumerate(text.split("\n"), 1):
        for match in CONTROL.finditer(line):
            hits.append((number, match.start() + 1, repr(match.group())))
    return hits


@pytest.mark.parametrize("path", text_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_control_characters(path):
    hits = control_characters(path.read_text(encoding="utf-8"))
    assert not hits, f"{path.relative_to(ROOT)}: control characters at (line, column): {hits}"


def test_negative_control_a_vertical_tab_and_a_form_feed_are_found():
    text = "ok line\n$(1 - \x0barepsilon)$ and \x0crac{1}{2}\n"
    assert control_characters(text) == [(2, 7, "'\\x0b'"), (2, 24, "'\\x0c'")]
    assert control_characters("tabs\tand\r\nnewlines are text\n") == []


def test_gelu_tail_figures_quoted_in_the_derivation_are_measured():
    doc = (ROOT / "docs" / "derivations.md").read_text()
    section = doc.split("**A cap for infinity.**", 1)[1].split("\n\n", 1)[0]
    for quoted in ("6.3 \\times 10^{-39}", "8.1 \\times 10^{-42}", "8 \\times 10^{-45}",
                   "-14.17"):
        assert quoted in section
    x = np.array([-13.0, -13.5, -14.0], dtype=np.float32)
    h, _ = normal_cdf_and_pdf(x)
    np.testing.assert_allclose(h, [6.3e-39, 8.1e-42, 8e-45], rtol=0.15)
    grid = np.arange(-16, -12, 0.001, dtype=np.float32)
    tail, _ = normal_cdf_and_pdf(grid)
    assert abs(float(grid[tail > 0].min()) - (-14.17)) < 0.01    # exactly 0 from here on
    cap, _ = normal_cdf_and_pdf(np.array([-20.0], dtype=np.float32))
    assert cap[0] == 0.0                     # so the cap at 20 changes no float32 result
