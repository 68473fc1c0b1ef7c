"""docs/pytorch.md's conformance coverage is what the conformance cases give today.

The report (coverage.py) is generated from the same entries, cases and skip table the
conformance run uses; after a change to tinyattn's names or to the skip table, regenerate it
with ``python -m tests.conformance.coverage --write``."""
import pytest

pytest.importorskip("torch", reason="the coverage report is computed from torch's databases")
pytest.importorskip("expecttest", reason="torch's test database needs expecttest")

from . import coverage  # noqa: E402


def test_the_committed_coverage_report_is_up_to_date():
    committed = coverage.committed_report(coverage.DOC.read_text(encoding="utf-8"))
    fresh = coverage.report()
    assert committed == fresh, ("docs/pytorch.md's conformance coverage is out of date: run "
                                "python -m tests.conformance.coverage --write")


def test_a_stale_report_is_caught():
    text = coverage.DOC.read_text(encoding="utf-8")
    stale = text.replace("| op_db (OpInfo) | ", "| op_db (OpInfo) | 1", 1)
    assert coverage.committed_report(stale) != coverage.report()
    with pytest.raises(ValueError, match="no generated conformance section"):
        coverage.committed_report("# a page without the section\n")
