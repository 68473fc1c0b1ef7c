"""What each notebook's pictures claim, checked inside the notebook's own kernel after it ran.

``SETUP`` runs first (before the notebook's cells): it keeps every matplotlib figure the
notebook makes, in ``_FIGURES``, in the order they were made. ``CLAIMS[stem]`` runs last,
with the notebook's variables at hand: for each figure, it reads what the figure draws
(image arrays, bar heights, line data, box texts, from matplotlib's artists, not pixels)
and compares it with an independent computation of what the figure's title or caption
says. A notebook in examples/notebooks without an entry here fails the test, so a new
notebook's pictures get their claims too (``NO_FIGURE_CLAIMS`` lists a notebook that
draws none, with the reason).
"""

SETUP = '''
import matplotlib.figure as _mfigure
import numpy as _np
_FIGURES = []
_figure_init = _mfigure.Figure.__init__
def _keep_figure(self, *args, **kwargs):       # pyplot's figures and draw_graph's alike
    _figure_init(self, *args, **kwargs)
    _FIGURES.append(self)
_mfigure.Figure.__init__ = _keep_figure
def _images(figure):
    return [_np.ma.getdata(ax.get_images()[0].get_array()) for ax in figure.axes
            if ax.get_images()]
'''

NO_FIGURE_CLAIMS = {"07_gradient_check_exercise": "text only: the checker's messages"}

CLAIMS = {
    "01_qkv_scaled_dot_product": '''
import numpy as _np
_w = _images(_FIGURES[0])[0]
_s = Q @ K.T / _np.sqrt(d_k)
_p = _np.exp(_s - _s.max(axis=1, keepdims=True))
_p /= _p.sum(axis=1, keepdims=True)
assert _np.allclose(_w, _p) and _np.allclose(_w.sum(axis=1), 1)   # "row i sums to 1"
_left, _right = _FIGURES[1].axes[:2]
_raw, _scaled = _left.lines[0].get_ydata(), _left.lines[1].get_ydata()
_x = _np.asarray(_left.lines[0].get_xdata(), dtype=float)
assert _np.all(_np.abs(_np.log(_raw / _x)) < 0.25)          # the variance grows like d_k
assert _np.all(_np.abs(_scaled - 1) < 0.25)                  # scaled: stays near 1
_unscaled_max, _scaled_max = _right.lines[0].get_ydata(), _right.lines[1].get_ydata()
assert _unscaled_max[-1] > 0.9 and _scaled_max[-1] < 0.5     # unscaled saturates
''',
    "02_softmax_backward": '''
import numpy as _np
_ax = _FIGURES[0].axes[0]
_curves = {line.get_label(): _np.asarray(line.get_ydata()) for line in _ax.lines}
for _name, _y in _curves.items():                            # a V: both ends above the bottom
    _k = int(_np.argmin(_y))
    assert 0 < _k < len(_y) - 1 and _y[0] > 10 * _y[_k] and _y[-1] > 10 * _y[_k], _name
assert _curves["float64"].min() < 1e-3 * _curves["float32"].min()
_eps = _np.asarray(_ax.lines[0].get_xdata())
_best = _eps[int(_np.argmin(_curves["float64"]))]
_g = _np.array([(loss(x + _e, _np.float64) - loss(x - _e, _np.float64)) / (2 * _best)
                for _e in _np.eye(len(x)) * _best])
assert _np.abs(_g - by_formula).max() <= 1.01 * _curves["float64"].min() + 1e-15
''',
    "03_masks": '''
import numpy as _np
_maps = _images(_FIGURES[0])
for _drawn, _allowed in zip(_maps, (may_attend_padding, causal, both)):
    _drawn = _drawn.astype(float)
    assert _np.array_equal(_np.isnan(_drawn), ~_allowed)      # grey exactly where masked
    _s = _np.where(_allowed, (q.detach().numpy()[0, 0] @ k.detach().numpy()[0, 0].T)
                   / _np.sqrt(d_k), -_np.inf)
    _p = _np.exp(_s - _s.max(axis=1, keepdims=True))
    _p /= _p.sum(axis=1, keepdims=True)
    assert _np.allclose(_drawn[_allowed], _p[_allowed])
    assert _np.allclose(_np.nansum(_drawn, axis=1), 1)        # each row sums to 1
''',
    "04_multi_head": '''
import numpy as _np
_untrained = _images(_FIGURES[0])
assert len(_untrained) == h
for _head, _w in enumerate(_untrained):                       # the module's own weights
    _q = (x.numpy() @ mha.q_proj.weight.numpy().T + mha.q_proj.bias.numpy())[0]
    _k = (x.numpy() @ mha.k_proj.weight.numpy().T + mha.k_proj.bias.numpy())[0]
    _sl = slice(_head * d_k, (_head + 1) * d_k)
    _s = _q[:, _sl] @ _k[:, _sl].T / _np.sqrt(d_k)
    _p = _np.exp(_s - _s.max(axis=1, keepdims=True))
    assert _np.allclose(_w, _p / _p.sum(axis=1, keepdims=True))
_maps = _images(_FIGURES[1])
_before, _after = _maps[:h], _maps[h:]
for _w in _before:                                            # untrained: spread out
    assert _w.max(axis=1).mean() < 0.5
    assert list(_np.argmax(_w[1:], axis=1)) != list(range(S - 1))
for _w in _after:                                             # trained: row i looks at i - 1
    assert list(_np.argmax(_w[1:], axis=1)) == list(range(S - 1))
    assert _np.diagonal(_w, -1).min() > 0.5
''',
    "05_positional_encodings": '''
import numpy as _np
_table, _similarity = _images(_FIGURES[0])
_p = _np.arange(_table.shape[0])[:, None]
_i = _np.arange(_table.shape[1] // 2)[None, :]
_angle = _p / 10000 ** (2 * _i / _table.shape[1])
_ref = _np.zeros_like(_table)
_ref[:, 0::2], _ref[:, 1::2] = _np.sin(_angle), _np.cos(_angle)
assert _np.allclose(_table, _ref)                             # the sinusoids of the paper
_u = _ref / _np.linalg.norm(_ref, axis=1, keepdims=True)
assert _np.allclose(_similarity, _u @ _u.T)                   # cosine similarity
_n = _similarity.shape[0]
for _o in range(1, 8):                                        # a band: each diagonal ~ constant
    _d = _np.diagonal(_similarity, _o)
    assert _d.max() - _d.min() < 0.05
assert len(_FIGURES) == 3                                     # the sinusoid is drawn once
_titles = " ".join(_f._suptitle.get_text() for _f in _FIGURES[1:] if _f._suptitle)
assert "RoPE" in _titles and "ALiBi" in _titles and "sinusoid" not in _titles.lower()
''',
    "06_engine": '''
_texts = [t.get_text() for ax in _FIGURES[0].axes for t in ax.texts]
_want = {"a": b.item() * f.item(), "b": a.item() * f.item(), "c": f.item(),
         "f": a.item() * b.item() + c.item(), "e": f.item(), "d": f.item(), "L": 1.0}
for _name, _grad in _want.items():                           # dL/dx by the chain rule, by hand
    _box = [t for t in _texts if t.split("\\n")[0].split(" ")[0] == _name]
    assert _box and f"grad {_grad:g}" in _box[0], (_name, _box)
_parts = " ".join(t.get_text() for ax in _FIGURES[1].axes for t in ax.texts)
for _part in ("softmax", "q", "k", "v"):                      # attention opened into its parts
    assert _part in _parts.lower(), _part
''',
    "08_transformer_training": '''
import json as _json, numpy as _np
from tinyattn.serialization import load as _load
_m = _json.loads((out / "metrics.json").read_text())
assert _m["heldout_exact_match"] == metrics["heldout_exact_match"] >= 0.99   # "jumps to 100%"
_history = _json.loads(str(_load(str(out / "checkpoint.npz"))["history"]))
_loss = _np.asarray([v for v in _history["train_loss"] if v is not None])
assert _loss[:10].mean() > 1.8 and _loss[-10:].mean() < 0.3       # from ~log(10) to near 0
# attention.png: "in layer 0 ... the query that predicts answer token k looks at prompt
# position 7 - k" (the mirror anti-diagonal), from the saved model, recomputed here
from tinyattn.train.sample import load_run as _load_run
from tinyattn.train.attention_history import attention_maps as _maps
_model, _task, _ = _load_run(str(out))
_x, _, _ = _task.heldout(1, 0)
_layer0 = _maps(_model, _x[0], "cpu")[0]                               # (h, S, S)
for _i in range(8, _layer0.shape[-1]):                                  # the scored rows
    assert any(int(_np.argmax(_layer0[_h, _i])) == 15 - _i for _h in range(len(_layer0))), _i
''',
    "10_rnn_to_attention": '''
import numpy as _np
# figure 1, "the gradient reaching step t from the last output": the plotted curves are
# |d out[-1] / d x_t|, recomputed here for the RNN with RNNCell steps (another code path);
# the tanh RNN's fades most
_lines = {line.get_label(): _np.asarray(line.get_ydata()) for line in _FIGURES[0].axes[0].lines}
ta.manual_seed(1)
_rnn = nn.RNN(1, hidden).double()
_x = ta.randn(steps, 1, 1, dtype=ta.float64, requires_grad=True)     # the notebook's draws
_cell = nn.RNNCell(1, hidden).double()
_cell.load_state_dict({k[:-3]: v for k, v in _rnn.state_dict().items()})    # its weights
_h = None
for _t in range(steps):
    _h = _cell(_x[_t], _h)
_h.sum().backward()
assert _np.allclose(_lines["RNN (tanh)"], _np.abs(_x.grad.numpy()[:, 0, 0]), rtol=1e-8)
_ratio = {k: v[0] / v[-1] for k, v in _lines.items()}
assert _ratio["RNN (tanh)"] < 1e-6
assert _ratio["RNN (tanh)"] < _ratio["GRU"] and _ratio["RNN (tanh)"] < _ratio["LSTM"]
# figure 2, "an anti-diagonal", shifted by one as the text says: the drawn image is the
# model's attention for sequence 0, rows sum to 1, and over the 256 held-out sequences the
# average weight of target step i >= 1 peaks at source position 6 - i (step 0 at 5), with
# most of the row's weight there
_w = _images(_FIGURES[1])[0]
assert _np.allclose(_w, weights.numpy()[0]) and _np.allclose(_w.sum(axis=1), 1)
_mean = weights.numpy().mean(axis=0)                                  # (L target, L source)
_expected = [LENGTH - 1] + [LENGTH - _i for _i in range(1, LENGTH)]
assert [int(_np.argmax(_row)) for _row in _mean] == _expected, _mean.round(2)
assert all(_mean[_i, _j] > 0.5 for _i, _j in enumerate(_expected))
''',
    "09_pretrained_models": '''
import numpy as _np
_bars = _FIGURES[-1].axes[0].patches
_heights = [bar.get_height() for bar in _bars]
_labels = [t.get_text() for t in _FIGURES[-1].axes[0].get_xticklabels()]
_all = generated.numpy()[0]
_prompt = ids.shape[1]
assert len(_heights) == len(_all) - _prompt
for _i, (_height, _label) in enumerate(zip(_heights, _labels)):
    _context = ta.tensor(_all[None, max(0, _prompt + _i - block):_prompt + _i])
    with ta.no_grad():
        _logits = gpt2(_context)
    _p = ta.softmax(_logits[:, -1], dim=-1).numpy()[0]
    _token = int(_all[_prompt + _i])                          # what generate (KV cache) picked
    assert _token == int(_p.argmax()), _i                     # each plotted token: the argmax
    assert abs(_height - _p[_token]) < 1e-5, (_i, _height, _p[_token])
    assert _label == repr(tokenizer.decode([_token]))[1:-1]
    assert _height >= 1.0 / len(_p)
if minilm is not None:
    for _w in _images(_FIGURES[0]):                           # attention rows sum to 1
        assert _np.allclose(_w.sum(axis=1), 1, atol=1e-5)
''',
    "11_attention_on_images": '''
import numpy as _np
_shown_images = _images(_FIGURES[0])
assert all(_np.allclose(_a, shown[_i, 0]) for _i, _a in enumerate(_shown_images[:6]))
with ta.no_grad():
    _maps = vit.attention_maps(ta.tensor(shown))
_r = None
for _m in _maps:                             # the rollout recomputed by hand
    _a = _m.numpy().astype(_np.float64).mean(axis=1) + _np.eye(17)
    _a /= _a.sum(axis=-1, keepdims=True)
    _r = _a if _r is None else _a @ _r
for _i, _drawn in enumerate(_shown_images[6:12]):   # "the class token's weight on each patch"
    assert _np.allclose(_drawn, _r[_i, 0, 1:].reshape(4, 4))
    assert 0 < _drawn.sum() < 1                 # the rest is its own weight
_tiles = _images(_FIGURES[1])
_pos = vit.pos_embed.detach().numpy()[0, 1:]
_u = _pos / _np.linalg.norm(_pos, axis=1, keepdims=True)
for _p, _tile in enumerate(_tiles):          # tile p is cos(pos[p], pos[q]); itself the max
    assert _np.allclose(_tile.ravel(), _u[_p] @ _u.T, atol=1e-6)
    assert int(_np.argmax(_tile.ravel())) == _p
_w = vit.patch_embed.weight.detach().numpy()[:16, 0]
assert all(_np.allclose(_f, _w[_i]) for _i, _f in enumerate(_images(_FIGURES[2])))
''',
}
