"""``import tinyattn`` does not import ml-dtypes (half a second of every script's, worker's
and spawned process's start); the first use of bfloat16 does, by every way a program names it.
Nor SciPy (scipy.special imports NumPy's f2py and testing: about 0.4 s of each start): the
first special function does. Each check runs in a fresh interpreter, where nothing has
imported ml-dtypes or SciPy yet."""
import subprocess
import sys

import pytest

_PROGRAM = r'''
import sys
import tinyattn
print("after import", "ml_dtypes" in sys.modules)
{body}
print("ml_dtypes" in sys.modules)
'''

# each names bfloat16 a different way first (one fresh process each) and checks what it got
_WAYS = {
    "dtype=": "x = tinyattn.ones(3, dtype=tinyattn.bfloat16); assert str(x.dtype) == 'bfloat16'",
    "string, method, finfo, precision": (
        "x = tinyattn.zeros(2).to('bfloat16'); assert x.dtype.name == 'bfloat16'\n"
        "assert tinyattn.tensor([1.5, 2.0]).bfloat16().tolist() == [1.5, 2.0]\n"
        "assert tinyattn.finfo(tinyattn.bfloat16).eps == 2 ** -7\n"
        "import tinyattn.precision as p; assert p.LOW_PRECISION[1].name == 'bfloat16'"),
    "autocast": ("with tinyattn.autocast('cpu'):\n"
                 "    y = tinyattn.ones(2, 2) @ tinyattn.ones(2, 2)\n"
                 "assert y.dtype.name == 'bfloat16'"),
}


def _run(body: str) -> list:
    done = subprocess.run([sys.executable, "-c", _PROGRAM.format(body=body)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_import_tinyattn_leaves_ml_dtypes_unimported():
    # negative control for the checks below: a float32 program never needs ml-dtypes
    out = _run("x = tinyattn.randn(4, requires_grad=True); (x.softmax(0) * x).sum().backward();"
               " assert tinyattn.finfo(tinyattn.float16).max == 65504")
    assert out == ["after", "import", "False", "False"]


@pytest.mark.parametrize("way", sorted(_WAYS))
def test_each_way_of_naming_bfloat16_works_in_a_fresh_process(way):
    out = _run(_WAYS[way])
    assert out == ["after", "import", "False", "True"]


def test_import_tinyattn_leaves_scipy_unimported_and_each_user_loads_it():
    """Each function that reads scipy.special (erf, backend.special_module's users,
    trunc_normal_'s erfinv, the Kaiser window's I0) imports it itself when first called, with
    SciPy's values; a float32 program without them never loads SciPy (the negative control)."""
    out = _run("import math\n"
               "(tinyattn.randn(4, requires_grad=True).softmax(0)).sum().backward()\n"
               "print('scipy' in sys.modules)\n"
               "x = tinyattn.tensor([0.5], dtype=tinyattn.float64)\n"
               "assert abs(tinyattn.erf(x).item() - math.erf(0.5)) < 1e-15\n"
               "assert abs(tinyattn.special.i0(x).item() - 1.0634833707413236) < 1e-14\n"
               "w = tinyattn.empty(1000, dtype=tinyattn.float64)\n"
               "tinyattn.nn.init.trunc_normal_(w, a=-0.5, b=0.5)\n"
               "assert -0.5 <= w.min().item() and w.max().item() <= 0.5 and w.std() > 0.2\n"
               "assert tinyattn.signal.windows.kaiser(3, beta=0.0).tolist() == [1.0] * 3\n"
               "print('scipy.special' in sys.modules)")
    assert out == ["after", "import", "False", "False", "True", "False"]   # last: ml-dtypes
