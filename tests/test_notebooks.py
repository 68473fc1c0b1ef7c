"""The learning path's notebooks (examples/notebooks/): each runs top to bottom in a fresh
kernel without an error, imports THIS checkout's tinyattn, is stored without outputs, and
matches its paired jupytext percent-format .py (the readable, diffable form).

Skipped with the reason when nbclient, ipykernel, jupytext or nbformat is missing
(``pip install -e ".[test]"`` brings them)."""
import os
import pathlib
import time

import pytest

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


def test_the_path_has_nine_numbered_notebooks_each_paired():
    assert [p.name[:2] for p in PAIRS] == [f"{n:02d}" for n in range(1, 10)]
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
    notebook = nbformat.read(str(py.with_suffix(".ipynb")), as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(
        "import tinyattn as _t, matplotlib as _m\nprint(_t.__file__, _m.get_backend())"))
    client = NotebookClient(notebook, timeout=LIMIT_S, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    start = time.perf_counter()
    try:
        client.execute()
    except CellExecutionError as error:
        pytest.fail(f"{py.stem}.ipynb failed:\n{error}")
    took = time.perf_counter() - start
    where = "".join(o.get("text", "") for o in notebook.cells[-1].outputs)
    assert str(ROOT / "tinyattn") in where, f"the kernel imported another tinyattn: {where}"
    assert "inline" in where.lower(), f"pictures must be inline outputs: {where}"
    images = sum("image/png" in o.get("data", {}) for c in notebook.cells
                 if c.cell_type == "code" for o in c.outputs)
    if py.name[:2] != "07":                                  # 07 is text: the checker
        assert images >= 1, f"{py.stem}.ipynb drew no picture"
    assert took < 4 * LIMIT_S, f"{py.stem}.ipynb took {took:.0f} s"
