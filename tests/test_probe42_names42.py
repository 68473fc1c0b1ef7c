"""Stream names42 (issue 30): grad_fn names as torch prints them (``y.grad_fn.name()``,
``<XBackward0 object>``, ``grad_fn=<...>``) for the ops a learner prints, and the aliasing
torch has (which op returns its input itself, which a view, which a copy), each compared with
torch on the same program."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tinyattn as ta  # noqa: E402


def _inputs(m, shapes, dtype="float64"):
    return [m.tensor(np.random.default_rng(i).standard_normal(s), dtype=getattr(m, dtype),
                     requires_grad=True) for i, s in enumerate(shapes)]


def _name(m, fn, shapes):
    out = fn(m)(*_inputs(m, shapes))
    out = out[0] if isinstance(out, (tuple, list)) else out
    return None if out.grad_fn is None else out.grad_fn.name()


F = "nn.functional"
_CASES = {
    # losses
    "cross_entropy probs": (lambda m: lambda x, p: m.nn.functional.cross_entropy(
        x, p.detach().softmax(1)), (3, 4), (3, 4)),
    "cross_entropy probs sum": (lambda m: lambda x, p: m.nn.functional.cross_entropy(
        x, p.detach().softmax(1), reduction="sum"), (3, 4), (3, 4)),
    "soft_margin_loss": (lambda m: lambda x, t: m.nn.functional.soft_margin_loss(
        x, t.detach().sign()), (3, 4), (3, 4)),
    "multi_margin_loss": (lambda m: lambda x: m.nn.functional.multi_margin_loss(
        x, m.tensor([0, 1, 2])), (3, 4)),
    "multilabel_margin_loss": (lambda m: lambda x: m.nn.functional.multilabel_margin_loss(
        x, m.tensor([[0, 1, -1, 0], [1, -1, 0, 0], [2, 3, -1, 0]])), (3, 4)),
    # activations and norms
    "glu": (lambda m: lambda x: m.nn.functional.glu(x), (3, 4)),
    "selu": (lambda m: lambda x: m.nn.functional.selu(x), (3, 4)),
    "rrelu": (lambda m: lambda x: m.nn.functional.rrelu(x), (3, 4)),
    "softsign": (lambda m: lambda x: m.nn.functional.softsign(x), (3, 4)),
    "rms_norm": (lambda m: lambda x, w: m.nn.functional.rms_norm(x, (4,), w), (3, 4), (4,)),
    "local_response_norm": (lambda m: lambda x: m.nn.functional.local_response_norm(x, 2),
                            (2, 3, 4)),
    "norm": (lambda m: lambda x: x.norm(), (3, 4)),
    "norm dim p=1": (lambda m: lambda x: x.norm(p=1, dim=1), (3, 4)),
    "linalg.vector_norm": (lambda m: lambda x: m.linalg.vector_norm(x, float("inf")), (3, 4)),
    "linalg.matrix_norm fro": (lambda m: lambda x: m.linalg.matrix_norm(x), (3, 4)),
    "dist": (lambda m: lambda x, y: m.dist(x, y), (3, 4), (3, 4)),
    "pairwise_distance": (lambda m: lambda x, y: m.nn.functional.pairwise_distance(x, y),
                          (3, 4), (3, 4)),
    "nanmean": (lambda m: lambda x: m.nanmean(x), (3, 4)),
    # attention (torch's CPU choice: flash for 4-D, the math path's matmul otherwise)
    "sdpa 4-d": (lambda m: lambda q, k, v: m.nn.functional.scaled_dot_product_attention(
        q, k, v, is_causal=True), (2, 2, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4)),
    "sdpa 3-d": (lambda m: lambda q, k, v: m.nn.functional.scaled_dot_product_attention(
        q, k, v), (2, 3, 4), (2, 3, 4), (2, 3, 4)),
    "sdpa d_v differs": (lambda m: lambda q, k, v: m.nn.functional.scaled_dot_product_attention(
        q, k, v), (1, 2, 3, 4), (1, 2, 3, 4), (1, 2, 3, 5)),
    "sdpa mask needing grad": (lambda m: lambda q, k, v, b: m.nn.functional.
                               scaled_dot_product_attention(q, k, v, attn_mask=b),
                               (1, 2, 3, 4), (1, 2, 3, 4), (1, 2, 3, 4), (3, 3)),
    # resizing and patches
    "interpolate nearest 1-d": (lambda m: lambda x: m.nn.functional.interpolate(
        x, scale_factor=2), (1, 2, 4)),
    "interpolate bilinear": (lambda m: lambda x: m.nn.functional.interpolate(
        x, scale_factor=2, mode="bilinear"), (1, 2, 3, 3)),
    "interpolate bicubic aa": (lambda m: lambda x: m.nn.functional.interpolate(
        x, size=2, mode="bicubic", antialias=True), (1, 1, 4, 4)),
    "interpolate area 1-d": (lambda m: lambda x: m.nn.functional.interpolate(
        x, size=3, mode="area"), (1, 2, 4)),
    "interpolate area to 1": (lambda m: lambda x: m.nn.functional.interpolate(
        x, size=1, mode="area"), (1, 2, 3, 3)),
    "pixel_shuffle": (lambda m: lambda x: m.nn.functional.pixel_shuffle(x, 2), (1, 4, 2, 2)),
    "pixel_unshuffle": (lambda m: lambda x: m.nn.functional.pixel_unshuffle(x, 2),
                        (1, 1, 4, 4)),
    "channel_shuffle": (lambda m: lambda x: m.nn.functional.channel_shuffle(x, 2),
                        (1, 4, 2, 2)),
    "F.unfold": (lambda m: lambda x: m.nn.functional.unfold(x, 2), (1, 2, 3, 3)),
    "Tensor.unfold": (lambda m: lambda x: x.unfold(0, 2, 1), (4,)),
    "F.fold": (lambda m: lambda x: m.nn.functional.fold(x, (3, 3), 2), (1, 8, 4)),
    "conv_transpose1d": (lambda m: lambda x, w: m.nn.functional.conv_transpose1d(x, w),
                         (1, 2, 4), (2, 3, 2)),
    "grid_sample": (lambda m: lambda x, g: m.nn.functional.grid_sample(
        x, g.tanh(), align_corners=False), (1, 1, 3, 3), (1, 2, 2, 2)),
    "dropout2d": (lambda m: lambda x: m.nn.functional.dropout2d(x), (2, 2, 3, 3)),
    # reshapes and indexing
    "x[:]": (lambda m: lambda x: x[:], (3, 4)),
    "x[:, :]": (lambda m: lambda x: x[:, :], (3, 4)),
    "x[True]": (lambda m: lambda x: x[True], (3, 4)),
    "split": (lambda m: lambda x: x.split(2), (4, 3)),
    "split sizes": (lambda m: lambda x: x.split([1, 3]), (4, 3)),
    "chunk": (lambda m: lambda x: x.chunk(2, 1), (3, 4)),
    "unsafe_chunk": (lambda m: lambda x: m.unsafe_chunk(x, 2), (4, 3)),
    "tensor_split": (lambda m: lambda x: x.tensor_split(2), (4, 3)),
    "unbind": (lambda m: lambda x: x.unbind(1), (3, 4)),
    "expand same shape": (lambda m: lambda x: x.expand(3, 4), (3, 4)),
    "atleast_2d": (lambda m: lambda x: m.atleast_2d(x), (3,)),
    "atleast_3d": (lambda m: lambda x: m.atleast_3d(x), (3, 4)),
    "rot90": (lambda m: lambda x: m.rot90(x), (3, 4)),
    "kron": (lambda m: lambda x, y: m.kron(x, y), (2, 2), (2, 2)),
    "repeat_interleave": (lambda m: lambda x: x.repeat_interleave(2), (3,)),
    "repeat_interleave counts": (lambda m: lambda x: m.repeat_interleave(
        x, m.tensor([1, 2, 1]), dim=0), (3, 2)),
    "index_fill": (lambda m: lambda x: m.index_fill(x, 0, m.tensor([0, 2]), 1.0), (3, 4)),
    "index_fill tensor": (lambda m: lambda x: m.index_fill(x, 0, m.tensor([0]), m.tensor(1.0)),
                          (3, 4)),
    "index_copy": (lambda m: lambda x, s: m.index_copy(x, 0, m.tensor([0, 2]), s),
                   (3, 4), (2, 4)),
    "index_put": (lambda m: lambda x, v: m.index_put(x, (m.tensor([0, 2]),), v), (3, 4), (4,)),
    "masked_scatter": (lambda m: lambda x, s: m.masked_scatter(x, x.detach() > 0, s),
                       (3, 4), (3, 4)),
    "diag_embed": (lambda m: lambda x: m.diag_embed(x), (2, 3)),
    "slice_scatter": (lambda m: lambda x, s: m.slice_scatter(x, s, 0, 0, 2), (3, 4), (2, 4)),
    "masked_fill tensor": (lambda m: lambda x: x.masked_fill(x.detach() > 0, m.tensor(0.0)),
                           (3, 4)),
    # reductions and arithmetic
    "prod": (lambda m: lambda x: x.prod(), (3, 4)),
    "prod dim": (lambda m: lambda x: x.prod(1), (3, 4)),
    "var_mean": (lambda m: lambda x: m.var_mean(x, 1), (3, 4)),
    "std_mean": (lambda m: lambda x: m.std_mean(x)[1], (3, 4)),
    "aminmax": (lambda m: lambda x: m.aminmax(x, dim=0)[1], (3, 4)),
    "trace": (lambda m: lambda x: m.trace(x), (3, 4)),
    "addmm": (lambda m: lambda c, a, b: m.addmm(c, a, b), (3, 5), (3, 4), (4, 5)),
    "baddbmm": (lambda m: lambda c, a, b: m.baddbmm(c, a, b), (2, 3, 5), (2, 3, 4), (2, 4, 5)),
    "addmv": (lambda m: lambda c, a, b: m.addmv(c, a, b), (3,), (3, 4), (4,)),
    "vdot": (lambda m: lambda x, y: m.vdot(x, y), (3,), (3,)),
    "cross": (lambda m: lambda x, y: m.linalg.cross(x, y), (2, 3), (2, 3)),
    "1 - x": (lambda m: lambda x: 1 - x, (3,)),
    "rsub": (lambda m: lambda x, y: m.rsub(x, y), (3,), (3,)),
    "div floor": (lambda m: lambda x, y: m.div(x, y, rounding_mode="floor"), (3,), (3,)),
    "x // y": (lambda m: lambda x, y: x // y, (3,), (3,)),
    "x % y": (lambda m: lambda x, y: x % y, (3,), (3,)),
    "fmod tensor": (lambda m: lambda x, y: m.fmod(x, y), (3,), (3,)),
    "round decimals=0": (lambda m: lambda x: m.round(x, decimals=0), (3,)),
    "round": (lambda m: lambda x: m.round(x), (3,)),
    # einsum: torch's last step (a permute, a sum, a product, or the view of a bmm)
    "einsum ij,jk->ik": (lambda m: lambda x, y: m.einsum("ij,jk->ik", x, y), (3, 4), (4, 2)),
    "einsum attention": (lambda m: lambda q, k: m.einsum("bhqd,bhkd->bhqk", q, k),
                         (1, 2, 3, 4), (1, 2, 5, 4)),
    "einsum outer": (lambda m: lambda x, y: m.einsum("i,j->ij", x, y), (3,), (4,)),
    "einsum trace": (lambda m: lambda x: m.einsum("ii", x), (3, 3)),
    "einsum transpose": (lambda m: lambda x: m.einsum("ij->ji", x), (3, 4)),
    "einsum three": (lambda m: lambda x, y, z: m.einsum("ij,jk,kd->id", x, y, z),
                     (2, 3), (3, 4), (4, 2)),
    # linalg and sampling
    "linalg.cholesky": (lambda m: lambda a: m.linalg.cholesky(a @ a.mT + m.eye(3)), (3, 3)),
    "linalg.eigh vectors": (lambda m: lambda a: m.linalg.eigh(a + a.mT)[1], (3, 3)),
    "linalg.svd S": (lambda m: lambda a: m.linalg.svd(a)[1], (3, 3)),
    "linalg.qr R": (lambda m: lambda a: m.linalg.qr(a)[1], (3, 3)),
    "linalg.svdvals": (lambda m: lambda a: m.linalg.svdvals(a), (3, 3)),
    "linalg.slogdet": (lambda m: lambda a: m.linalg.slogdet(a)[1], (3, 3)),
    "normal(tensor, float)": (lambda m: lambda x: m.normal(x, 1.0), (3,)),
    "bernoulli": (lambda m: lambda x: m.bernoulli(x.sigmoid()), (3,)),
    "matrix_power 1": (lambda m: lambda a: m.linalg.matrix_power(a, 1), (3, 3)),
    "diff n=0": (lambda m: lambda x: m.diff(x, n=0), (4,)),
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_grad_fn_name_as_torchs(name):
    make, *shapes = _CASES[name]
    assert _name(ta, make, shapes) == _name(torch, make, shapes)


_WRITES = {
    "x[0] = 1": lambda m, x: x.__setitem__(0, 1.0),
    "x[:, 0] += 1": lambda m, x: x[:, 0].__iadd__(1.0),
    "x[mask] = 0": lambda m, x: x.__setitem__(x.detach() > 0, 0.0),
    "x[[0, 1]] = 0": lambda m, x: x.__setitem__([0, 1], 0.0),
    "x[0, [1, 2]] = 0": lambda m, x: x.__setitem__((0, [1, 2]), 0.0),
    "x[...] = 1": lambda m, x: x.__setitem__(Ellipsis, 1.0),
    "x[:] = row": lambda m, x: x.__setitem__(slice(None), m.ones(4, dtype=m.float64)),
    "zero_": lambda m, x: x.zero_(),
    "fill_": lambda m, x: x.fill_(2.0),
    "fill_ tensor": lambda m, x: x.fill_(m.tensor(2.0, dtype=m.float64)),
    "copy_": lambda m, x: x.copy_(m.ones(3, 4, dtype=m.float64)),
    "row zero_": lambda m, x: x[0].zero_(),
    "t_": lambda m, x: x.t_(),
    "transpose_": lambda m, x: x.transpose_(0, 1),
    "unsqueeze_": lambda m, x: x.unsqueeze_(0),
    "squeeze_(0)": lambda m, x: x.unsqueeze_(0).squeeze_(0),
}


@pytest.mark.parametrize("name", sorted(_WRITES))
def test_writes_name_the_node_as_torch(name):
    def run(m):
        (x,) = _inputs(m, [(3, 4)])
        y = x.clone()
        _WRITES[name](m, y)
        return y.grad_fn.name(), repr(y).split("grad_fn=")[1]
    assert run(ta) == run(torch)


def test_a_write_that_records_nothing_keeps_the_name_of_the_node_before():
    for m in (ta, torch):
        (x,) = _inputs(m, [(3,)])
        y = x * 2
        with m.no_grad():
            y.zero_()
        assert y.grad_fn.name() == "MulBackward0"


_ALIASING = {     # what torch returns: the input itself, or a new tensor
    "flatten 1-d": lambda m, x: x.flatten(),
    "flatten(1, 1)": lambda m, x: x.reshape(2, 2).flatten(1, 1),
    "squeeze of a dim not 1": lambda m, x: x.squeeze(0),
    "squeeze((0,)) of a dim not 1": lambda m, x: x.squeeze((0,)),
    "diff n=0": lambda m, x: m.diff(x, n=0),
    "conj_physical of real": lambda m, x: m.conj_physical(x),
    "matrix_power 1": lambda m, x: m.linalg.matrix_power(x.reshape(2, 2), 1),
    "to(dtype, non_blocking, copy) positionally": lambda m, x: x.to(m.float32, False, True),
    "to channels_last": lambda m, x: x.reshape(1, 2, 1, 2).to(memory_format=m.channels_last),
    "contiguous channels_last": lambda m, x: x.reshape(1, 2, 1, 2).contiguous(
        memory_format=m.channels_last),
    "contiguous channels_last, one channel": lambda m, x: x.reshape(1, 1, 2, 2).contiguous(
        memory_format=m.channels_last),
    "dropout3d unbatched eval": lambda m, x: m.nn.functional.dropout3d(
        x.reshape(1, 1, 2, 2), training=False),
}


@pytest.mark.parametrize("name", sorted(_ALIASING))
def test_what_is_returned_itself_a_view_or_a_copy_as_torch(name):
    def run(m):
        x = m.arange(4.0).requires_grad_()
        y = _ALIASING[name](m, x)
        shares = y.data_ptr() == x.data_ptr() if m is torch else \
            np.shares_memory(y._data, x._data)
        return y is x, shares, y.is_leaf, None if y.grad_fn is None else y.grad_fn.name()
    assert run(ta) == run(torch)


@pytest.mark.parametrize("fill", ["uniform_()", "normal_()", "exponential_()", "random_(0, 5)",
                                  "cauchy_()", "log_normal_()", "geometric_(0.5)",
                                  "bernoulli_(0.5)"])
def test_a_random_fill_in_the_graph_keeps_requires_grad_with_a_zero_gradient(fill):
    """torch records x.clone().uniform_() (UniformBackward0, a zero gradient to the clone):
    the result still requires grad and backward through it works; tinyattn dropped it from
    the graph (requires_grad False), so loss.backward() on it alone raised."""
    def run(m):
        x = m.ones(3, requires_grad=True)
        y = eval("(x * 2)." + fill, {"x": x})
        y.sum().backward()
        return y.requires_grad, y.is_leaf, y.grad_fn.name(), x.grad.tolist()
    assert run(ta) == run(torch)


def test_diff_n0_is_a_copy_writing_it_leaves_the_input():
    x = ta.arange(3.0)
    y = ta.diff(x, n=0)
    y += 1
    assert x.tolist() == [0.0, 1.0, 2.0]        # torch: a copy as well


def test_negative_control_the_names_come_from_the_renaming_not_the_classes():
    """Without the renaming these nodes print tinyattn's class names: the cases above test
    the mechanism, not a coincidence of names."""
    (x,) = _inputs(ta, [(3, 4)])
    y = ta.nn.functional.interpolate(x.reshape(1, 3, 4), scale_factor=2)
    assert type(y.grad_fn).__name__ + "Backward0" != y.grad_fn.name()
    z = ta.index_copy(x, 0, ta.tensor([0]), x[:1].detach())
    assert type(z.grad_fn).__name__ == "WriteRegion" and z.grad_fn.name() == "IndexCopyBackward0"
