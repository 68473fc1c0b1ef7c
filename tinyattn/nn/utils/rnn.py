"""``tinyattn.nn.utils.rnn``: PyTorch's ways to batch sequences of different lengths.

``pad_sequence`` stacks them with padding; the padded batch goes with a padding mask
(``nn.key_padding_mask``, True = padding, as PyTorch's ``key_padding_mask``) so that attention
never looks at the padding. ``pack_padded_sequence`` / ``pack_sequence`` make a
``PackedSequence`` instead, which the recurrent layers (nn.RNN, nn.LSTM, nn.GRU) run without
ever stepping over padding; ``pad_packed_sequence`` turns their packed output back into a
padded batch.

A PackedSequence, as PyTorch's (docs/pytorch.md#packed-sequences): the sequences sorted
longest first (``sorted_indices[k]`` is the original batch index of sorted row k), then
``data`` holds time step 0 of every sequence, then step 1 of those still running, ...;
``batch_sizes[t]`` (int64, on the CPU) counts the sequences running at step t.
"""
from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ...ops import cat, index_select, pad, stack
from ...tensor import Tensor, tensor

__all__ = ["pad_sequence", "PackedSequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence", "invert_permutation"]


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Optional[Tensor]
    unsorted_indices: Optional[Tensor]


def invert_permutation(permutation: Optional[Tensor]) -> Optional[Tensor]:
    """The permutation that undoes ``permutation`` (None stays None)."""
    if permutation is None:
        return None
    order = np.asarray(permutation.numpy())
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)
    return tensor(inverse, device=permutation.device)


class PackedSequence(_PackedFields):
    """Sequences of different lengths packed step by step (see the module docstring); a named
    tuple ``(data, batch_sizes, sorted_indices, unsorted_indices)`` as PyTorch's. Make one with
    ``pack_padded_sequence`` or ``pack_sequence``, not by hand."""

    def __new__(cls, data: Tensor, batch_sizes: Optional[Tensor] = None,
                sorted_indices: Optional[Tensor] = None,
                unsorted_indices: Optional[Tensor] = None) -> "PackedSequence":
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            raise TypeError("PackedSequence needs batch_sizes; build one with "
                            "pack_padded_sequence(...) or pack_sequence(...)")
        if not isinstance(batch_sizes, Tensor):
            batch_sizes = tensor(np.asarray(batch_sizes, dtype=np.int64))
        if batch_sizes.ndim != 1 or batch_sizes.dtype.kind not in "iu":
            raise ValueError(f"PackedSequence: batch_sizes must be a 1-D integer tensor, got "
                             f"shape {batch_sizes.shape} of {batch_sizes.dtype}")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        """``data`` moved/cast by ``Tensor.to``; the indices follow its device, batch_sizes
        stays on the CPU (PyTorch's rule)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def cpu(self) -> "PackedSequence":
        return self.to("cpu")

    def cuda(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        return self.to("cuda")

    def double(self) -> "PackedSequence":
        return self.to(np.float64)

    def float(self) -> "PackedSequence":
        return self.to(np.float32)

    def half(self) -> "PackedSequence":
        return self.to(np.float16)

    @property
    def is_cuda(self) -> bool:
        return str(self.data.device).startswith("cuda")

    def is_pinned(self) -> bool:
        return False


def _lengths_list(op: str, lengths: Any, batch: int) -> List[int]:
    """``lengths`` (a list or a 1-D integer tensor on the CPU) as Python ints, checked."""
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise ValueError(f"{op}: lengths must be 1-D (one length per sequence), got shape "
                             f"{lengths.shape}")
        if str(lengths.device) != "cpu":
            raise RuntimeError(f"{op}: 'lengths' argument should be a 1D CPU int64 tensor, but "
                               f"got 1D {lengths.device} tensor; pass lengths.cpu()")
        if lengths.dtype.kind not in "iu":
            raise RuntimeError(f"{op}: lengths must be integers, got {lengths.dtype}; pass "
                               f"lengths.long()")
        values = [int(v) for v in np.asarray(lengths.numpy())]
    else:
        values = [int(v) for v in lengths]
    if len(values) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(values)} (batch_size={batch})")
    return values


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch (T, B, *) ((B, T, *) with ``batch_first``) of sequences whose
    lengths are ``lengths`` (B Python ints or a 1-D int64 CPU tensor). With ``enforce_sorted``
    (the default) the lengths must be in decreasing order; ``enforce_sorted=False`` sorts them
    (stably) and remembers the order in ``sorted_indices``. Differentiable: the gradient of
    each packed step flows back to its place in ``input``; the padding gets zeros."""
    op = "pack_padded_sequence"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}: input must be a Tensor, got {type(input).__name__}")
    if input.ndim < 2:
        raise ValueError(f"{op}: input must be at least 2-D (T, B, *), got shape {input.shape}")
    if batch_first:
        input = input.transpose(0, 1)                   # (B, T, *) -> (T, B, *)
    steps, batch = input.shape[0], input.shape[1]
    values = _lengths_list(op, lengths, batch)
    if values and min(values) <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if values and max(values) > steps:
        raise ValueError(f"{op}: a length of {max(values)} is longer than the sequences in "
                         f"input, which have {steps} steps (input shape {input.shape}, "
                         f"batch_first={batch_first}); lengths must be at most {steps}")
    sorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(values, values[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
    else:
        order = np.argsort(-np.asarray(values, dtype=np.int64), kind="stable")
        sorted_indices = tensor(order.astype(np.int64), device=input.device)
        input = index_select(input, 1, sorted_indices)  # (T, B, *) longest first
        values = [values[i] for i in order]
    batch_sizes = [sum(1 for n in values if n > t) for t in range(max(values, default=0))]
    data = cat([input[t, :size] for t, size in enumerate(batch_sizes)], dim=0)  # (N, *)
    return PackedSequence(data, tensor(np.asarray(batch_sizes, dtype=np.int64)), sorted_indices,
                          None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: Optional[int] = None
                        ) -> Tuple[Tensor, Tensor]:
    """The inverse of ``pack_padded_sequence``: (padded (T, B, *) or (B, T, *), lengths), the
    batch in its original order, T = ``total_length`` when given (at least the longest
    length), positions past each length filled with ``padding_value``; lengths is int64."""
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"pad_packed_sequence expects a PackedSequence, got "
                        f"{type(sequence).__name__}")
    sizes = [int(v) for v in np.asarray(sequence.batch_sizes.numpy())]
    steps = len(sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
    else:
        total_length = steps
    data, batch = sequence.data, sizes[0] if sizes else 0
    trailing = (0, 0) * (data.ndim - 1)                 # F.pad lists the last dim first
    rows, start = [], 0
    for size in sizes:
        step = data[start:start + size]                 # (b_t, *)
        rows.append(pad(step, trailing + (0, batch - size), value=padding_value))   # (B, *)
        start += size
    padded = stack(rows, dim=0)                         # (T, B, *)
    if total_length > steps:
        padded = pad(padded, trailing + (0, 0, 0, total_length - steps), value=padding_value)
    lengths = np.asarray([sum(1 for s in sizes if s > b) for b in range(batch)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = index_select(padded, 1, sequence.unsorted_indices)
        lengths = lengths[np.asarray(sequence.unsorted_indices.numpy())]
    if batch_first:
        padded = padded.transpose(0, 1)                 # (T, B, *) -> (B, T, *)
    return padded, tensor(lengths)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of (L_i, *) tensors: ``pack_padded_sequence(pad_sequence(sequences),
    [L_i], enforce_sorted=enforce_sorted)``."""
    lengths = [seq.shape[0] if isinstance(seq, Tensor) and seq.ndim else 0 for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths,
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Any,
                   batch_first: bool = False) -> List[Tensor]:
    """The list of (L_i, *) tensors inside a padded batch (the inverse of pad_sequence)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)    # (T, B, *) -> (B, T, *)
    values = _lengths_list("unpad_sequence", lengths, padded_sequences.shape[0])
    return [padded_sequences[b, :n] for b, n in enumerate(values)]


def unpack_sequence(packed_sequences: PackedSequence) -> List[Tensor]:
    """The list of (L_i, *) tensors inside a PackedSequence, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def pad_sequence(sequences: Union[Tensor, Sequence[Tensor]], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack tensors (L_i, *) into one (T, B, *) tensor, or (B, T, *) with ``batch_first``,
    T = max L_i, filling the missing positions with ``padding_value`` (after each sequence,
    or before it with ``padding_side="left"``). Differentiable: each sequence's gradient is
    its rows of the batch's gradient (the padding's is dropped). As PyTorch's, the default
    layout is sequence-first; tinyattn's own modules take batch_first=True."""
    op = "pad_sequence"
    if isinstance(sequences, Tensor):
        sequences = [sequences[i] for i in range(len(sequences))] if sequences.ndim else [
            sequences]
    sequences = list(sequences)
    if not sequences:
        raise ValueError(f"{op}: received an empty list of sequences; pass at least one")
    for i, seq in enumerate(sequences):
        if not isinstance(seq, Tensor):
            raise TypeError(f"{op}: sequence {i} is a {type(seq).__name__}, not a Tensor; "
                            f"wrap it with tinyattn.tensor(...)")
        if seq.ndim == 0:
            raise ValueError(f"{op}: sequence {i} is 0-d; each sequence needs a length axis "
                             f"(L, *)")
        if seq.shape[1:] != sequences[0].shape[1:]:
            raise ValueError(f"{op}: sequence {i} has shape {seq.shape} but sequence 0 has "
                             f"{sequences[0].shape}; all must be (L_i, *) with the same "
                             f"trailing dims")
    if padding_side not in ("right", "left"):
        raise ValueError(f"{op}: padding_side must be 'right' or 'left', got "
                         f"{padding_side!r}")
    longest = max(seq.shape[0] for seq in sequences)
    trailing = (0, 0) * (sequences[0].ndim - 1)         # F.pad lists the last dim first
    padded = []
    for seq in sequences:
        missing = longest - seq.shape[0]
        before, after = (0, missing) if padding_side == "right" else (missing, 0)
        padded.append(pad(seq, trailing + (before, after), value=padding_value))  # (T, *)
    return stack(padded, dim=0 if batch_first else 1)   # (B, T, *) or (T, B, *)
