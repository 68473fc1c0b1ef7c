"""The op table drives these: every row's forward against its NumPy/SciPy reference, and a
float64 full-Jacobian gradcheck, over every case (broadcasting, masks, repeated indices).

TINYATTN_TEST_DEVICE=cuda (set by ``python -m tinyattn doctor``) runs them on that device."""
import os

import numpy as np
import pytest

import tinyattn as ta
from tinyattn.optable import OP_TABLE, make_inputs

DEVICE = os.environ.get("TINYATTN_TEST_DEVICE", "cpu")
if DEVICE == "strict":
    from tinyattn import strict_device
    strict_device.enable()
ROWS = [(spec, case) for spec in OP_TABLE for case in spec.cases(np.random.default_rng(0))]
IDS = [f"{spec.name}[{case.label}]" for spec, case in ROWS]


@pytest.mark.parametrize("spec,case", ROWS, ids=IDS)
def test_forward_matches_reference_float64(spec, case):
    out = spec.fn(*make_inputs(case, device=DEVICE))
    expected = spec.reference(*case.arrays)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec,case", ROWS, ids=IDS)
def test_float32_stays_float32_forward_and_backward(spec, case):
    inputs = make_inputs(case, dtype=np.float32, device=DEVICE)
    out = spec.fn(*inputs)
    assert out.dtype == np.float32, f"{spec.name} upcast its float32 output to {out.dtype}"
    out.sum().backward()
    for x in inputs:
        if x.requires_grad:
            assert x.grad is not None and x.grad.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), spec.reference(*case.arrays), rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("spec,case", ROWS, ids=IDS)
def test_gradcheck_full_jacobian(spec, case):
    report = ta.gradcheck_report(spec.fn, make_inputs(case, device=DEVICE))
    assert report.passed, str(report)


def _anchors(markdown: str) -> set:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    import re
    return {re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            for line in markdown.splitlines() if line.startswith("#")}


def test_every_doc_section_named_by_the_table_exists():
    import pathlib
    docs = pathlib.Path(__file__).parent.parent / "docs"
    missing = []
    for spec in OP_TABLE:
        doc, _, anchor = spec.section.rpartition("#") if "#" in spec.section else (
            "derivations.md", "#", spec.section)
        if anchor not in _anchors((docs / doc).read_text()):
            missing.append(f"{spec.name}: docs/{doc}#{anchor}")
    assert not missing, f"op table points to sections that do not exist: {missing}"


def _functions_in_graph(out):
    seen, stack, found = set(), [out._ctx], set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        found.add(type(fn))
        stack.extend(fn.parents)
    return found


def _op_functions():
    from tinyattn.autograd import Function
    found, stack = set(), [Function]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("tinyattn.ops."):
                found.add(sub)
    return found


def test_every_op_function_is_exercised_by_a_row_of_the_table():
    """Adding an op means adding a row: every Function in tinyattn/ops must appear in the
    graph of at least one row (and so be gradchecked, compared and run on the strict device).
    """
    rng = np.random.default_rng(0)
    covered = set()
    for spec in OP_TABLE:
        for case in spec.cases(rng):
            out = spec.fn(*make_inputs(case))
            covered |= _functions_in_graph(out)
    # unique's nodes have no derivative by design (their backward raises torch's error,
    # tests/test_torch_differences.py): nothing for a gradcheck row to check
    from tinyattn.ops.no_derivative import NoDerivative
    no_derivative = {f for f in _op_functions() if issubclass(f, NoDerivative)}
    missing = sorted(f"{f.__module__}.{f.__name__}"
                     for f in _op_functions() - covered - no_derivative)
    assert not missing, f"ops without an op-table row: {missing}"


def test_the_coverage_check_can_fail():
    """Negative control: a graph that uses only Add does not cover Mul."""
    from tinyattn.ops.elementwise import Add, Mul
    x = ta.tensor([1.0], requires_grad=True)
    found = _functions_in_graph(x + 1.0)
    assert Add in found and Mul not in found


def test_the_op_table_mirrors_the_ops_folder():
    """The rows of the ops in ops/X.py are in optable/X.py, and __init__ lists every rows
    module in FAMILIES (a module left out would silently drop its rows from the table)."""
    import pathlib
    import tinyattn.optable as optable
    root = pathlib.Path(optable.__file__).parent
    rows_modules = {p.stem for p in root.glob("*.py")} - {"__init__", "spec", "cases"}
    ops_modules = {p.stem for p in (root.parent / "ops").glob("*.py")}
    assert rows_modules <= ops_modules, rows_modules - ops_modules
    assert {m.__name__.rsplit(".", 1)[1] for m in optable.FAMILIES} == rows_modules
    assert len(OP_TABLE) == sum(len(m.ROWS) for m in optable.FAMILIES)
