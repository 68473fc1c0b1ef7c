"""docs/derivations.md quotes the code it explains: every quoted line must still be in the
file it names, so the derivation a learner reads cannot drift from the op that runs."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
QUOTE = re.compile(r"<!-- quote: (\S+) -->\n```\w*\n(.*?)\n```", re.S)


def _squash(line: str) -> str:
    return re.sub(r"\s+", "", line)


def stale_quotes(text: str) -> list:
    stale = []
    for match in QUOTE.finditer(text):
        path, body = match.group(1), match.group(2)
        source = {_squash(line) for line in (ROOT / path).read_text().splitlines()}
        stale += [f"{path}: {line.strip()}" for line in body.splitlines()
                  if line.strip() not in ("", "...") and _squash(line) not in source]
    return stale


def test_every_quoted_line_is_still_in_the_source():
    text = (ROOT / "docs" / "derivations.md").read_text()
    assert len(QUOTE.findall(text)) == text.count("<!-- quote:") > 10
    assert stale_quotes(text) == []


def test_negative_control_a_changed_line_is_reported():
    doc = '<!-- quote: tinyattn/ops/softmax.py -->\n```python\nreturn y * 42  # not there\n```'
    assert stale_quotes(doc) == ["tinyattn/ops/softmax.py: return y * 42  # not there"]
