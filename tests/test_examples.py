"""The two small examples run and beat their baselines (short runs)."""
import importlib.util
import pathlib

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_classify_needs_word_order_and_attention_gets_it(capsys):
    results = _load("classify").main(["--steps", "180"])   # 0.994 at 180 steps, 0.978 at 120
    assert results["bag of words (baseline)"] < 0.6          # order-blind: a coin flip
    assert results["attention + positions"] > 0.9
    assert "test accuracy" in capsys.readouterr().out


def test_forecast_beats_persistence(capsys):
    results = _load("forecast").main(["--steps", "100"])   # 0.055 at 90 steps (0.080 at 60)
    assert results["attention"] < 0.5 * results["persistence (baseline)"]
    assert "next-step MSE" in capsys.readouterr().out
