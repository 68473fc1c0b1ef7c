"""Every relative link in README.md and docs/*.md points at a file that exists and, when it
names a heading (#anchor), at a heading that exists, with GitHub's rule for anchors:
lower case, punctuation dropped (hyphens and underscores kept), each space a hyphen, no
collapsing ("What positions buy: `--pos-encoding none`" -> what-positions-buy---pos-...)."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def github_anchor(heading: str) -> str:
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)          # \w keeps letters, digits, underscore
    return text.replace(" ", "-")


def anchors(page: pathlib.Path) -> set:
    found, seen, fenced = set(), {}, False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if fenced or not line.startswith("#"):
            continue
        slug = github_anchor(line.lstrip("#"))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(page: pathlib.Path):
    fenced = False
    for line in page.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        if not fenced:
            yield from LINK.findall(line)


def test_the_anchor_rule_on_known_headings():
    assert github_anchor(" What positions buy: `--pos-encoding none`") == \
        "what-positions-buy---pos-encoding-none"
    assert github_anchor(" Set up (two commands, from a clone)") == \
        "set-up-two-commands-from-a-clone"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_resolve_to_files_and_headings(page):
    broken = []
    for target in links(page):
        if re.match(r"[a-z]+:", target) or target.startswith("mailto"):
            continue                                  # http(s) and other schemes
        path, _, anchor = target.partition("#")
        file = page if not path else (page.parent / path).resolve()
        if not file.exists():
            broken.append(f"{target}: no file {file.relative_to(ROOT)}")
            continue
        if anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert broken == [], f"{page.name}: " + "; ".join(broken)
