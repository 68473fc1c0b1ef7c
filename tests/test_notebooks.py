"""The learning path's notebooks (examples/notebooks/): each runs top to bottom in a fresh
kernel without an error, imports THIS checkout's tinyattn, is stored without outputs, and
matches its paired jupytext percent-format .py (the readable, diffable form). Each picture a
notebook draws is checked against an independent computation of what it claims
(tests/notebook_claims.py), and each notebook has its executed page in docs/notebooks/ whose
code is the notebook's own (docs/notebook_pages.py writes them; the page of a notebook
that changed must be written again).

Skipped with the reason when nbclient, ipykernel, jupytext or nbformat is missing
(``pip install -e ".[test]"`` brings them)."""
import importlib.util
import os
import pathlib
import time

import pytest

from notebook_claims import CLAIMS, NO_FIGURE_CLAIMS, SETUP

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "examples" / "notebooks"
PAIRS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))
LIMIT_S = 120            # each notebook, the bound on two cores (they take 5-30 s)

nbformat = pytest.importorskip("nbformat", reason="nbformat reads the notebooks "
                               "(pip install -e '.[test]')")
jupytext = pytest.importorskip("jupytext", reason="jupytext pairs each notebook with its .py "
                               "(pip install -e '.[test]')")


def _cells(notebook):
    return [(cell.cell_type, cell.source.strip()) for cell in notebook.cells]


def _pages_module():
    spec = importlib.util.spec_from_file_location("notebook_pages",
                                                  ROOT / "docs" / "notebook_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_path_has_numbered_notebooks_each_paired():
    assert len(PAIRS) >= 9
    assert [p.name[:2] for p in PAIRS] == [f"{n:02d}" for n in range(1, len(PAIRS) + 1)]
    for py in PAIRS:
        assert py.with_suffix(".ipynb").is_file(), f"{py.name} has no paired .ipynb"
    stray = {p.stem for p in NOTEBOOKS.glob("*.ipynb")} - {p.stem for p in PAIRS}
    assert not stray, f"notebooks without a paired .py: {sorted(stray)}"


@pytest.mark.parametrize("py", PAIRS, ids=lambda p: p.stem)
def test_stored_without_outputs_and_equal_to_its_pair(py):
    notebook = nbformat.read(str(py.with_suffix(".ipynb")), as_version=4)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{py.stem}.ipynb cell {index} has stored outputs: clear them (jupytext "
                f"--to ipynb {py.name} rewrites it from the .py)")
    paired = jupytext.read(str(py))
    assert _cells(notebook) == _cells(paired), (
        f"{py.stem}.ipynb and {py.name} differ: edit one, then jupytext --sync {py.name}")
    assert notebook.metadata.get("kernelspec", {}).get("name") == "python3"


def test_negative_control_an_edited_pair_and_a_stored_output_are_caught(tmp_path):
    py = PAIRS[0]
    notebook = nbformat.read(str(py.with_suffix(".ipynb")), as_version=4)
    edited = jupytext.reads(py.read_text().replace("Queries, keys", "Keys, queries"),
                            fmt="py:percent")
    assert _cells(notebook) != _cells(edited)
    code = next(c for c in notebook.cells if c.cell_type == "code")
    code.outputs = [nbformat.v4.new_output("stream", text="hi")]
    assert any(c.cell_type == "code" and c.outputs for c in notebook.cells)


def test_notebooks_use_only_public_names():
    """No private name of tinyattn (a leading underscore) in any notebook."""
    import re
    private = re.compile(r"\b(?:ta|F|nn|tinyattn[\w.]*)\.(_\w+)")
    for py in PAIRS:
        found = private.findall(py.read_text())
        assert not found, f"{py.name} uses private names: {found}"


@pytest.mark.parametrize("py", PAIRS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(py, monkeypatch):
    pytest.importorskip("nbclient", reason="nbclient executes the notebooks "
                        "(pip install -e '.[test]')")
    pytest.importorskip("ipykernel", reason="ipykernel is the notebooks' kernel "
                        "(pip install -e '.[test]')")
    pytest.importorskip("matplotlib", reason="the notebooks draw with matplotlib")
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    # The kernel is a subprocess: it inherits this environment, so put this checkout first
    # (an editable install elsewhere would otherwise answer `import tinyattn`).
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), path) if p))
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    monkeypatch.delenv("MPLBACKEND", raising=False)          # the kernel's inline backend
    assert py.stem in CLAIMS or py.stem in NO_FIGURE_CLAIMS, (
        f"{py.stem}: say what its pictures claim in tests/notebook_claims.py (CLAIMS)")
    notebook = nbformat.read(str(py.with_suffix(".ipynb")), as_version=4)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(SETUP))
    notebook.cells.append(nbformat.v4.new_code_cell(CLAIMS.get(py.stem, "")))
    notebook.cells.append(nbformat.v4.new_code_cell(
        "import tinyattn as _t, matplotlib as _m\nprint(_t.__file__, _m.get_backend())"))
    client = NotebookClient(notebook, timeout=LIMIT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as error:
        failed = "a claim of its pictures" if "assert" in str(error) and CLAIMS.get(
            py.stem, "\0").strip()[:40] in str(error) else "a cell"
        pytest.fail(f"{py.stem}.ipynb: {failed} failed:\n{error}")
    took = time.perf_counter() - start
    where = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    assert str(ROOT / "tinyattn") in where, f"the kernel imported another tinyattn: {where}"
    assert "inline" in where.lower(), f"pictures must be inline outputs: {where}"
    images = sum("image/png" in o.get("data", {}) for c in notebook.cells
                 if c.cell_type == "code" for o in c.outputs)
    if py.stem not in NO_FIGURE_CLAIMS:
        assert images >= 1, f"{py.stem}.ipynb drew no picture"
    assert took < 4 * LIMIT_S, f"{py.stem}.ipynb took {took:.0f} s"
    page = PAGES / f"{py.stem}.md"
    assert page.is_file(), (f"{py.stem} has no executed page in docs/notebooks/: run "
                            f"python3 docs/make_figures.py --only notebooks")


PAGES = ROOT / "docs" / "notebooks"


@pytest.mark.parametrize("py", PAIRS, ids=lambda p: p.stem)
def test_each_notebook_has_its_executed_page_with_the_same_code(py):
    """A learner reads docs/notebooks/NN.md without running anything: the page must be this
    notebook's code (not an older version), with every picture it shows on disk."""
    pages = _pages_module()
    page = PAGES / f"{py.stem}.md"
    assert page.is_file(), f"no docs/notebooks/{py.stem}.md: python3 docs/make_figures.py"
    text = page.read_text(encoding="utf-8")
    notebook = nbformat.read(str(py.with_suffix(".ipynb")), as_version=4)
    code = [c.source for c in notebook.cells if c.cell_type == "code" and c.source.strip()]
    assert pages.page_code(text) == code, (
        f"docs/notebooks/{py.stem}.md is not the notebook's current code: run python3 "
        f"docs/make_figures.py --only notebooks")
    for image in pages.page_images(text):
        assert (PAGES / image).is_file(), image
    if py.stem not in NO_FIGURE_CLAIMS:
        assert pages.page_images(text), f"{py.stem}: its page shows no picture"
    index = (PAGES / "README.md").read_text(encoding="utf-8")
    assert f"({py.stem}.md)" in index


def test_negative_control_a_stale_page_is_caught():
    pages = _pages_module()
    page = "```python\nx = 1\n```\n\n```text\n1\n```\n![output](a_files/c.png)\n"
    assert pages.page_code(page) == ["x = 1"] and pages.page_images(page) == ["a_files/c.png"]
    assert pages.page_code(page.replace("x = 1", "x = 2")) != ["x = 1"]
    assert pages._stream_text("step 1\rstep 2\rstep 3\ndone") == "step 3\ndone"
