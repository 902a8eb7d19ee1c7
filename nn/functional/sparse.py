"""``embedding``: a checked row gather; backward scatter-adds rows with atomics
(``kernels/embedding.py``), itself a Function whose backward is the embedding again.
``one_hot``: int64, no gradient."""
from __future__ import annotations

from tgrad import _dtype
from tgrad import ops
from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.indexing import embedding as KE
from tgrad.ops.common import check_runnable, wrap
from tgrad.tensor import Tensor

__all__ = ["embedding", "one_hot"]


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
