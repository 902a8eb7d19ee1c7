"""``torch.nn.utils.rnn``: padding and packing variable-length sequences.

A ``PackedSequence`` holds the steps of a batch sorted by decreasing length, time-major:
``data`` (sum(lengths), *) has ``batch_sizes[t]`` rows for time t (the sequences still running
then). Packing and unpacking are row gathers (``index_select``, whose backward scatters the
gradient back), with index lists computed on the host from the lengths; padding rows gather a
row of ``padding_value`` appended to the data.
"""
from __future__ import annotations

from collections import namedtuple

import tgrad

__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence"]


class PackedSequence(namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None and sorted_indices is not None:
            unsorted_indices = _invert(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes, self.sorted_indices,
                                                          self.unsorted_indices)

    @property
    def is_cuda(self):
        return self.data.is_cuda


def _invert(perm):
    order = perm.tolist()
    inv = [0] * len(order)
    for i, p in enumerate(order):
        inv[p] = i
    return tgrad.tensor(inv, dtype=tgrad.int64, device=perm.device)


def _lengths_list(lengths):
    if isinstance(lengths, tgrad.Tensor):
        if lengths.ndim != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.ndim}D "
                               f"{lengths.device.type} {lengths.dtype} tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def _index(values, device):
    return tgrad.tensor(values, dtype=tgrad.int64, device=device)


def _with_pad_row(data, padding_value):
    """data (N, *) with one more row of ``padding_value``: index N is the padding."""
    pad = tgrad.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    return tgrad.cat([data, pad], 0)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) (``batch_first``: (B, T, *)) of sequences of ``lengths``."""
    lens = _lengths_list(lengths)
    B = input.shape[0 if batch_first else 1]
    if len(lens) != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={B})")
    if enforce_sorted:
        if any(lens[i] < lens[i + 1] for i in range(len(lens) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        order = list(range(B))
        sorted_indices = None
    else:
        order = sorted(range(B), key=lambda i: -lens[i])  # stable, as torch.sort(descending=True) here
        sorted_indices = _index(order, input.device)
    if lens and min(lens) <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    T = input.shape[1 if batch_first else 0]
    if lens and max(lens) > T:
        raise RuntimeError(f"Expected sequence length to be larger than or equal to max length {max(lens)}, "
                           f"but got {T}")
    sorted_lens = [lens[i] for i in order]
    batch_sizes = [sum(1 for n in sorted_lens if n > t) for t in range(max(sorted_lens, default=0))]
    rows = []
    for t, bs in enumerate(batch_sizes):
        for k in range(bs):
            b = order[k]
            rows.append(b * T + t if batch_first else t * B + b)
    flat = input.reshape((T * B,) + tuple(input.shape[2:]))
    data = flat.index_select(0, _index(rows, input.device))
    return PackedSequence(data, tgrad.tensor(batch_sizes, dtype=tgrad.int64), sorted_indices,
                          None if sorted_indices is None else _invert(sorted_indices))


def _packed_lengths(batch_sizes):
    sizes = [int(v) for v in batch_sizes.tolist()]
    B = sizes[0] if sizes else 0
    return sizes, [sum(1 for s in sizes if s > b) for b in range(B)]


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """(padded (T, B, *) or (B, T, *), lengths int64) from a PackedSequence, in the original batch order."""
    data, batch_sizes, _, unsorted = sequence
    sizes, sorted_lens = _packed_lengths(batch_sizes)
    T, B = len(sizes), (sizes[0] if sizes else 0)
    if total_length is not None:
        if total_length < T:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {T}")
        T = total_length
    start = [0]
    for s in sizes:
        start.append(start[-1] + s)
    pad_row = data.shape[0]
    order = list(range(B)) if unsorted is None else [int(v) for v in unsorted.tolist()]
    rows = []
    for i in ((b, t) for b in range(B) for t in range(T)) if batch_first else ((b, t) for t in range(T)
                                                                               for b in range(B)):
        b, t = i
        k = order[b]  # original batch slot b holds sorted sequence k
        rows.append(start[t] + k if t < len(sizes) and k < sizes[t] else pad_row)
    padded = _with_pad_row(data, padding_value).index_select(0, _index(rows, data.device))
    shape = ((B, T) if batch_first else (T, B)) + tuple(data.shape[1:])
    lengths = tgrad.tensor([sorted_lens[order[b]] for b in range(B)], dtype=tgrad.int64)
    return padded.reshape(shape), lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack tensors (L_i, *) into (L_max, B, *) (``batch_first``: (B, L_max, *)), padding with
    ``padding_value`` on ``padding_side`` ('right' or 'left')."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if isinstance(sequences, tgrad.Tensor):
        sequences = list(sequences.unbind(0))
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    lens = [s.shape[0] for s in sequences]
    T, B = max(lens), len(sequences)
    data = tgrad.cat([s.reshape((s.shape[0],) + tuple(s.shape[1:])) for s in sequences], 0)
    start = [0]
    for n in lens:
        start.append(start[-1] + n)
    pad_row = start[-1]
    rows = []
    pairs = ((b, t) for b in range(B) for t in range(T)) if batch_first else ((b, t) for t in range(T)
                                                                             for b in range(B))
    for b, t in pairs:
        k = t if padding_side == "right" else t - (T - lens[b])
        rows.append(start[b] + k if 0 <= k < lens[b] else pad_row)
    padded = _with_pad_row(data, padding_value).index_select(0, _index(rows, data.device))
    return padded.reshape(((B, T) if batch_first else (T, B)) + tuple(sequences[0].shape[1:]))


def pack_sequence(sequences, enforce_sorted=True):
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[b, :n] for b, n in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
