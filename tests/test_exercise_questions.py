"""Every docs section an exercise points to ends with two or three questions the learner can
answer by running something: the questions are there, and the snippet that answers them
runs (a snippet that crashes would teach nothing)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tinyattn.exercises import EXERCISES

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"Check it yourself:\n\n((?:\d\. .*\n(?:   .*\n)*)+)\n```python\n(.*?)\n```",
                   re.S)


def _anchor(heading: str) -> str:
    text = heading.lstrip("#").strip().lower()
    return "-".join("".join(c for c in text if c.isalnum() or c in " -").split(" "))


def _section(page: str, anchor: str) -> str:
    """The text of the section ``anchor`` of ``page``, subsections included."""
    lines = (ROOT / page).read_text().split("\n")
    in_code, start, level = False, None, 0
    for i, line in enumerate(lines):
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"#+ ", line):
            continue
        depth = len(line.split(" ")[0])
        if start is not None and depth <= level:
            return "\n".join(lines[start:i])
        if start is None and _anchor(line) == anchor:
            start, level = i, depth
    assert start is not None, f"{page}#{anchor}: no such heading"
    return "\n".join(lines[start:])


SECTIONS = sorted({tuple(ex.read.split("#")) for ex in EXERCISES})


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # np.exp(1000.0): the point
@pytest.mark.parametrize("page, anchor", SECTIONS, ids=["#".join(s) for s in SECTIONS])
def test_each_exercise_section_ends_with_questions_a_snippet_answers(page, anchor):
    blocks = BLOCK.findall(_section(page, anchor))
    assert blocks, f"{page}#{anchor} has no 'Check it yourself' questions"
    questions, code = blocks[-1]
    assert 2 <= len(re.findall(r"^\d\. ", questions, re.M)) <= 3, questions
    exec(compile(code, f"{page}#{anchor}", "exec"), {})


def test_a_missing_block_is_noticed():
    assert not BLOCK.findall("## A section\n\nSome text.\n\n```python\nprint(1)\n```\n")
