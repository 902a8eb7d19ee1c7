"""``embedding``: a checked row gather; backward scatter-adds rows with atomics
(``kernels/embedding.py``), itself a Function whose backward is the embedding again.
``embedding_bag``: the rows of each bag summed, averaged or max-reduced, composed from tgrad ops (a
gather, then ``index_add`` / ``scatter_reduce`` by bag: their backwards are the scatter and gather).
``one_hot``: int64, no gradient."""
from __future__ import annotations

from tgrad import _dtype
from tgrad import ops
from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.indexing import embedding as KE
from tgrad.ops.common import check_runnable, wrap
from tgrad.tensor import Tensor

__all__ = ["embedding", "embedding_bag", "one_hot"]


class _Embedding(BuiltinFunction):
    node_name = "EmbeddingBackward0"
    edge_args = (0,)  # the indices are not differentiable: no edge, as in PyTorch

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        out, bad = KE.embedding_forward(indices._data, weight._data)
        if bad is not None:  # PyTorch's text, then the offending value
            raise IndexError(f"index out of range in self (index {bad} for an embedding of "
                             f"{weight.shape[0]} rows)")
        ctx.meta = (weight.shape[0], padding_idx)
        ctx.save_for_backward(indices)
        return wrap(out)

    @staticmethod
    def backward(ctx, g):
        indices, = ctx.saved_tensors
        V, padding_idx = ctx.meta
        # the row scatter-add is itself a Function (recorded under create_graph)
        return _EmbeddingDense.apply(g, indices, V, padding_idx), None, None


class _EmbeddingDense(BuiltinFunction):
    """The embedding backward as a differentiable op of g (for create_graph): its own gradient is
    the embedding of the incoming gradient, with the padding row zeroed."""
    node_name = "EmbeddingDenseBackward0"
    edge_args = (0,)

    @staticmethod
    def forward(ctx, g, indices, V, padding_idx):
        ctx.save_for_backward(indices)
        ctx.padding_idx = padding_idx
        D = g.shape[-1]
        return wrap(KE.embedding_backward(indices._data, g._data.reshape(indices.numel(), D), V, padding_idx))

    @staticmethod
    def backward(ctx, gg):
        indices, = ctx.saved_tensors
        if ctx.padding_idx is not None:  # the padding row received nothing, so sends nothing back
            keep = ops.ones(gg.shape[0], 1, dtype=gg.dtype, device=gg.device)
            keep[ctx.padding_idx] = 0.0
            gg = gg * keep
        return embedding(indices, gg), None, None, None


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` (num_embeddings, dim) picked by the integer tensor ``input``; the
    ``padding_idx`` row gets no gradient."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("tgrad's embedding supports neither max_norm, scale_grad_by_freq nor sparse")
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.dtype.legacy} instead (while checking arguments for "
                           "embedding)")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got {weight.ndim}-D")
    V = weight.shape[0]
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise AssertionError(f"Padding_idx must be within num_embeddings (got padding_idx={padding_idx} for "
                                 f"num_embeddings={V})")
        padding_idx %= V
    check_runnable(input, weight)
    return _Embedding.apply(weight, input, padding_idx)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Per bag, the sum / mean / max of the ``weight`` rows its indices pick. Bags are the rows of a
    2-D ``input``, or the runs of a 1-D ``input`` starting at ``offsets``; ``per_sample_weights``
    scales each row (mode 'sum'); indices equal to ``padding_idx`` are left out of their bag; an
    empty bag gives zeros."""
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        offsets = ops.arange(0, input.numel(), max(input.shape[1], 1), device=input.device)[:input.shape[0]]
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("tgrad's embedding_bag supports neither max_norm, scale_grad_by_freq nor sparse")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                  "on GitHub.")
    for t, name in ((input, "indices"), (offsets, "offsets")):
        if t.dtype not in (_dtype.int64, _dtype.int32):
            raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar "
                               f"types: Long, Int; but got {t.dtype.legacy} instead (while checking arguments for "
                               "embedding_bag)")
    check_runnable(input, weight, offsets, per_sample_weights)
    V = weight.shape[0]
    bad = ((input < 0) | (input >= V)).nonzero()
    if bad.shape[0]:
        i = int(bad[0, 0])
        raise RuntimeError(f"Index {i} of input takes value {int(input[i])} which is not in the valid range [0, {V})")
    if offsets.shape[0] and int(offsets[0]) != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {int(offsets[0])}")
    bags = offsets.shape[0] - 1 if include_last_offset else offsets.shape[0]
    n = input.shape[0]
    # each index's bag: the last offset at or before its position
    bag = ops.searchsorted(offsets.long(), ops.arange(n, device=input.device), right=True) - 1
    if include_last_offset and bags > 0:  # as PyTorch's: indices past the last offset join the last bag
        bag = bag.clamp(max=bags - 1)
    keep = bag < bags
    if padding_idx is not None:
        if not -V <= padding_idx < V:
            raise AssertionError("padding_idx must be within num_embeddings")
        keep = keep & (input != padding_idx % V)
    kept = keep.nonzero().reshape(-1)
    bag, idx = bag[kept], input.long()[kept]
    rows = weight[idx]
    if per_sample_weights is not None:
        rows = rows * per_sample_weights[kept].unsqueeze(1)
    out = ops.zeros(bags, weight.shape[1], dtype=weight.dtype, device=weight.device)
    if mode == "max":
        return out.scatter_reduce(0, bag.unsqueeze(1).expand(rows.shape), rows, "amax", include_self=False)
    out = out.index_add(0, bag, rows)
    if mode == "mean":
        count = ops.bincount(bag, minlength=bags).clamp(min=1).to(weight.dtype)
        out = out / count.unsqueeze(1)
    return out


def one_hot(tensor, num_classes=-1):
    """int64 (*tensor.shape, num_classes) with a 1 at each index; num_classes=-1 takes max + 1."""
    if not isinstance(tensor, Tensor) or tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes < -1:
        raise RuntimeError("num_classes should be positive")
    if tensor.numel() == 0:
        if num_classes <= 0:  # PyTorch: 0 classes on an empty input counts as "infer", which cannot be done
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        lo, hi = KE.index_range(tensor._data)  # one launch, one read-back
        if lo < 0:
            raise RuntimeError(f"Class values must be non-negative. (got {lo})")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError(f"Class values must be smaller than num_classes. (got {hi} with "
                               f"num_classes={num_classes})")
    return wrap(KE.one_hot(tensor._data, int(num_classes)))
