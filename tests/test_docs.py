"""The docs quote the code they explain: every quoted line must still be in the file it names,
and lines quoted together must stand together there (a `...` line marks a gap), so the
derivation a learner reads cannot drift from the op that runs, nor silently skip a line."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
QUOTE = re.compile(r"<!-- quote: (\S+) -->\n```\w*\n(.*?)\n```", re.S)
DOCS = sorted((ROOT / "docs").glob("*.md"))


def _squash(line: str) -> str:
    return re.sub(r"\s+", "", line)


def _segments(body: str) -> list:
    """The quoted lines, squashed, split into runs at each `...` line (blank lines dropped)."""
    runs, run = [], []
    for line in body.splitlines():
        if line.strip() == "...":
            runs.append(run)
            run = []
        elif line.strip():
            run.append(_squash(line))
    return [r for r in runs + [run] if r]


def _contains_run(source: list, run: list) -> bool:
    return any(source[i:i + len(run)] == run for i in range(len(source) - len(run) + 1))


def stale_quotes(text: str) -> list:
    stale = []
    for match in QUOTE.finditer(text):
        path, body = match.group(1), match.group(2)
        source = [_squash(line) for line in (ROOT / path).read_text().splitlines()
                  if line.strip()]
        missing = [line.strip() for line in body.splitlines()
                   if line.strip() not in ("", "...") and _squash(line) not in set(source)]
        stale += [f"{path}: {line}" for line in missing]
        if not missing:
            stale += [f"{path}: lines not adjacent in the source (add a '...' line): "
                      f"{run[0]} ..." for run in _segments(body)
                      if not _contains_run(source, run)]
    return stale


def test_every_quoted_line_is_still_in_the_source():
    text = (ROOT / "docs" / "derivations.md").read_text()
    assert len(QUOTE.findall(text)) == text.count("<!-- quote:") > 10
    for doc in DOCS:
        text = doc.read_text()
        assert len(QUOTE.findall(text)) == text.count("<!-- quote:"), doc.name
        assert stale_quotes(text) == [], doc.name


def test_negative_control_a_changed_line_is_reported():
    doc = '<!-- quote: tinyattn/ops/softmax.py -->\n```python\nreturn y * 42  # not there\n```'
    assert stale_quotes(doc) == ["tinyattn/ops/softmax.py: return y * 42  # not there"]


def test_negative_control_a_silently_skipped_line_is_reported():
    """Both lines exist in softmax.py, but two lines apart: without '...' that is a misquote
    (the GELU quote once dropped its `if approximate == "tanh":` this way)."""
    body = ("xp = backend.get_array_module(x)\n"
            "return xp.where(xp.isfinite(m), m, 0)")
    doc = f"<!-- quote: tinyattn/ops/softmax.py -->\n```python\n{body}\n```"
    assert len(stale_quotes(doc)) == 1 and "not adjacent" in stale_quotes(doc)[0]
    gap = body.replace("\n", "\n...\n")
    assert stale_quotes(f"<!-- quote: tinyattn/ops/softmax.py -->\n```python\n{gap}\n```") == []
