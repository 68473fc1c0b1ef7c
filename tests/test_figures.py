"""The figures in docs/figures/: every one is shown in a doc with a caption line after it,
and docs/make_figures.py regenerates exactly that set (at a quick size, into a temp folder)."""
import importlib.util
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIGURES = ROOT / "docs" / "figures"
IMAGE = re.compile(r"!\[[^\]]*\]\((?:\.\./)?(?:docs/)?figures/([^)\s]+)\)")
CAPTION = re.compile(r"^\*[^*].{30,}\*$", re.S)   # an italic paragraph of a few words


def _pages():
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def references(pages):
    """figure name -> [(page, caption line or None)] for every image of docs/figures."""
    found = {}
    for page in pages:
        lines = page.read_text(encoding="utf-8").split("\n")
        for number, line in enumerate(lines):
            for name in IMAGE.findall(line):
                after = []                      # the paragraph right under the image
                for following in lines[number + 1:]:
                    if not following.strip():
                        break
                    after.append(following.strip())
                text = " ".join(after)
                caption = text if CAPTION.match(text) else None
                found.setdefault(name, []).append((page.name, caption))
    return found


def _make_figures():
    spec = importlib.util.spec_from_file_location("make_figures",
                                                  ROOT / "docs" / "make_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_figure_is_shown_with_a_caption():
    on_disk = sorted(p.name for p in FIGURES.iterdir())
    assert on_disk, "docs/figures/ is empty"
    found = references(_pages())
    for name in on_disk:
        assert name in found, f"docs/figures/{name} is not shown in any doc"
        assert all(caption for _, caption in found[name]), (
            f"docs/figures/{name}: the line after the image must be an italic caption "
            f"(*what to look for ...*): {found[name]}")
    missing = sorted(set(found) - set(on_disk))
    assert not missing, f"docs show figures that are not in docs/figures/: {missing}"


def test_negative_control_an_unshown_or_uncaptioned_figure_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("![a](figures/a.png)\n*what to look for: the bright diagonal, one per row*"
                    "\n\n![b](figures/b.png)\nplain text, no caption\n"
                    "\n![c](figures/c.png)\n\n*too late*\n")
    found = references([page])
    assert found["a.png"][0][1] is not None and found["b.png"][0][1] is None
    assert found["c.png"][0][1] is None                   # a caption must follow at once
    assert "d.png" not in found


def test_the_script_regenerates_exactly_the_committed_figures(tmp_path):
    pytest.importorskip("matplotlib")
    module = _make_figures()
    assert module.expected_files() == sorted(p.name for p in FIGURES.iterdir())
    assert module.main(["--quick", "--out", str(tmp_path)]) == 0
    made = sorted(p.name for p in tmp_path.iterdir())
    assert made == module.expected_files()
    assert all((tmp_path / name).stat().st_size > 1000 for name in made)
