"""``tinyattn.nn.utils.rnn.pad_sequence``: PyTorch's way to batch sequences of different
lengths. The padded batch goes with a padding mask (``nn.key_padding_mask``, True = padding,
as PyTorch's ``key_padding_mask``) so that attention never looks at the padding.
"""
from __future__ import annotations

from typing import Sequence, Union

from ...ops import pad, stack
from ...tensor import Tensor

__all__ = ["pad_sequence"]


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
