"""Views: results that share storage with their input (torch makes the view; no kernel runs).

A view shares its source's version counter and remembers its root ``_base``, so an in-place change
through any alias is seen by autograd, and an in-place op on a view of a non-leaf rewrites the base's
history (``CopySlices``), as in PyTorch.
"""
from __future__ import annotations

import weakref

import torch

from ..autograd.function import BuiltinFunction, Node, edge_of
from ..autograd.saved import Saved
from ..autograd.view_function import ViewFunction
from ..modes import enable_grad
from ..tensor import Tensor
from tgrad.kernels import elementwise as M
from .common import dense_order, wrap
from .formula import fused
from .pointwise import Where


def make_view(x: Tensor, data: torch.Tensor, multi_output: bool = False) -> Tensor:
    """A view of ``x`` over ``data``. ``multi_output``: one of several views one op returns (split,
    unbind), which, like every view of it, may not be modified in place while it requires grad."""
    t = Tensor._wrap(data, version=x._vc, base=x._base if x._base is not None else x)
    t._view_version = x._vc.value  # the version its history describes (see refresh_view)
    if multi_output or x._multi_output:
        t._multi_output = True
    return t


def _geometry(t: Tensor, base: Tensor):
    return tuple(t._data.shape), tuple(t._data.stride()), t._data.storage_offset() - base._data.storage_offset()


def storage_order(x: Tensor):
    """The dims of ``x`` from outermost to innermost in memory, if its elements are a permutation of
    a contiguous block (the layouts ops produce); else None. A geometry (size, stride, offset) read
    off storage then describes a region of ``x.permute(order).contiguous()``, which is how the
    gradients of as_strided and of in-place ops on views are laid out for any such base."""
    return dense_order(x._data)


def _inverse(order):
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return tuple(inverse)


def refresh_view(t: Tensor):
    """Give a view a current history if its storage was changed in place after its grad_fn was
    recorded (through its base or another view): it becomes an as_strided view of its base's
    current history (``AsStridedBackward0``), as PyTorch regenerates it. Without this the view
    would keep pointing at the base's old history and miss the in-place write's gradient."""
    recorded = t.__dict__.get("_view_version")
    if recorded is None or recorded == t._vc.value:
        return
    base = t._base
    if t._grad_fn is None and base._grad_fn is None:  # no history then, none now (a leaf's view)
        return
    if storage_order(base) is None:  # see rebase_history: such bases never reach here with a history
        return
    if t._multi_output:  # PyTorch gives such views no new history, and refuses their use
        op = t._grad_fn.name().rsplit("Backward", 1)[0] if t._grad_fn is not None else "a view"
        raise RuntimeError(f"Output {t._output_nr} of {op} is a view and its base or another view of its base has been "
                           "modified inplace. This view is the output of a function that returns multiple views. Such "
                           "functions do not allow the output views to be modified inplace. You should replace the "
                           "inplace operation by an out-of-place one.")
    with enable_grad():
        again = AsStrided.apply(base, *_geometry(t, base))
    t._grad_fn, t._output_nr, t._requires_grad = again._grad_fn, 0, True
    t._view_version = t._version.value


def normalize_basic(x: Tensor, index):
    """Check a basic index against ``x``'s shape and return it as a tuple torch can apply as a view
    (no ``...``: each becomes the full slices it stands for).

    Every ``...`` skips the dims the other entries leave, so a second one (PyTorch allows any number)
    skips them again and what follows it lands past x's last dim: there a slice that would keep a
    whole dim of size 0 (start 0, step 1, stop >= 0) applies nothing, and an int, None, other slice
    or (see ``advanced``) index tensor raises IndexError. PyTorch reads the size of a dim past the
    end out of bounds there, which is 0 for the tensors it keeps sizes inline for."""
    if not isinstance(index, tuple):
        index = (index,)
    ndim = x._data.dim()
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    if n_real > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    skip = ndim - n_real
    out, dim, rdim = [], 0, 0  # dim: of x; rdim: of the result so far (ints drop a dim, None adds one)
    for pos, i in enumerate(index):
        if i is Ellipsis:
            out.extend([slice(None)] * max(0, min(skip, ndim - dim)))
            dim, rdim = dim + skip, rdim + skip
        elif isinstance(i, slice) and i.step is not None and i.step <= 0:
            raise ValueError("step must be greater than zero")
        elif dim > ndim or (dim == ndim and i is not None):
            _past_the_end(x, i, pos, rdim, rdim + ndim - dim)
            dim, rdim = dim + 1, rdim + 1  # a slice that applies nothing (the rest raise)
        elif i is None:
            out.append(i)
            rdim += 1
        elif isinstance(i, slice):
            out.append(i)
            dim, rdim = dim + 1, rdim + 1
        else:
            size = x._data.shape[dim]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size {size}")
            out.append(i % size)
            dim += 1
    return tuple(out)


def _past_the_end(x: Tensor, i, pos, rdim, r):
    """Entry ``i`` (at ``pos`` in the index) lands on dim ``rdim`` of a result of ``r`` dims, past
    its end (after a second ``...``): a slice keeping all of a size-0 dim is a no-op, else IndexError."""
    if isinstance(i, slice) and (i.start or 0) == 0 and (i.step or 1) == 1 and (i.stop is None or i.stop >= 0):
        return
    if isinstance(i, slice) or i is None:
        n = r + (i is None)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {rdim}): "
                         f"index entry {pos} lands past the last dim after a second ellipsis ('...')")
    raise IndexError(f"index {i} is out of bounds for dimension {pos} with size 0: index entry {pos} lands past "
                     f"the last dim of a tensor of dimension {x.ndim} after a second ellipsis ('...')")


def _zeros(shape, like: Tensor) -> Tensor:
    return wrap(torch.zeros(tuple(shape), dtype=like._data.dtype, device=like.device))


def scatter_slice_into_zeros(g: Tensor, shape, index) -> Tensor:
    """zeros(shape) with ``g`` written at basic index ``index`` (the backward of a slice)."""
    z = _zeros(shape, g)
    fused(M.identity, [g], g.dtype, out=wrap(z._data[index]), compute=g.dtype)
    return z


class View(ViewFunction):
    node_name = "ViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        if isinstance(ctx, Node):  # what backward reads, for a recorded call only
            ctx.in_shape = x.shape
        return make_view(x, x._data.view(shape))

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


class UnsafeView(View):
    """reshape of a tensor that could not be viewed: its fresh copy, reshaped. Not a view (PyTorch's
    _unsafe_view): nothing else sees the copy, so an in-place op on it is an ordinary one."""
    node_name = "UnsafeViewBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return Tensor._wrap(x._data.view(shape))


class ReshapeAlias(View):
    """reshape of a non-contiguous tensor that can still be viewed."""
    node_name = "ReshapeAliasBackward0"


class Permute(ViewFunction):
    node_name = "PermuteBackward0"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return make_view(x, x._data.permute(dims))

    @staticmethod
    def backward(ctx, g):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return g.permute(*inverse), None


class Transpose(ViewFunction):
    node_name = "TransposeBackward0"

    @staticmethod
    def forward(ctx, x, d0, d1):
        ctx.dims = (d0, d1)
        return make_view(x, x._data.transpose(d0, d1))

    @staticmethod
    def backward(ctx, g):
        return g.transpose(*ctx.dims), None, None


class T(ViewFunction):
    node_name = "TBackward0"

    @staticmethod
    def forward(ctx, x):
        return make_view(x, x._data.t())

    @staticmethod
    def backward(ctx, g):
        return g.t()


class Reshaped(ViewFunction):
    """squeeze/unsqueeze: a view whose gradient is the upstream gradient reshaped back."""

    @staticmethod
    def forward(ctx, x, data):
        ctx.in_shape = x.shape
        return make_view(x, data)

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.in_shape), None


class Squeeze(Reshaped):
    node_name = "SqueezeBackward0"


class SqueezeDim(Reshaped):
    node_name = "SqueezeBackward1"


class SqueezeDims(Reshaped):
    node_name = "SqueezeBackward2"


class Unsqueeze(Reshaped):
    node_name = "UnsqueezeBackward0"


class Expand(ViewFunction):
    node_name = "ExpandBackward0"

    @staticmethod
    def forward(ctx, x, shape):
        ctx.in_shape = x.shape
        return make_view(x, x._data.expand(shape))

    @staticmethod
    def backward(ctx, g):
        return g, None  # the engine sums it back over the expanded dims


class Slice(ViewFunction):
    """Basic indexing (ints, slices, None, ...): a view; its gradient is scattered into zeros."""
    node_name = "SliceBackward0"

    @staticmethod
    def forward(ctx, x, index):
        out = x._data[index]
        if isinstance(ctx, Node):  # what backward reads, for a recorded call only
            ctx.in_shape, ctx.index = x.shape, index
            ctx.whole = out.numel() == x.numel()
        return make_view(x, out)

    @staticmethod
    def backward(ctx, g):
        if ctx.whole:  # every element was kept (only None, full slices, size-1 dims): no scatter
            return g.reshape(ctx.in_shape), None
        return ScatterSlice.apply(g, ctx.in_shape, ctx.index), None


class Select(Slice):
    node_name = "SelectBackward0"


# Basic indexing is one node, named like the last view PyTorch would chain for the same index
class IndexUnsqueeze(Slice):
    node_name = "UnsqueezeBackward0"


class Alias(Slice):
    node_name = "AliasBackward0"


class ScatterSlice(BuiltinFunction):
    """The backward of a slice as a differentiable op: zeros with ``g`` at ``index``; its own
    gradient is the slice of the incoming one."""
    node_name = "SliceBackwardBackward0"

    @staticmethod
    def forward(ctx, g, shape, index):
        ctx.index = index
        return scatter_slice_into_zeros(g, shape, index)

    @staticmethod
    def backward(ctx, gg):
        return Slice.apply(gg, ctx.index), None, None


class AsStrided(BuiltinFunction):
    node_name = "AsStridedBackward0"

    @staticmethod
    def forward(ctx, base, size, stride, offset):
        order = storage_order(base)
        if order is None:
            raise RuntimeError("tgrad: the gradient of as_strided on a tensor whose elements are not a permutation "
                               "of a contiguous block is not supported; call .contiguous() first")
        ctx.geometry, ctx.in_shape, ctx.order = (size, stride, offset), base.shape, order
        return make_view(base, base._data.as_strided(size, stride, base._data.storage_offset() + offset))

    @staticmethod
    def backward(ctx, g):
        return AsStridedScatter.apply(g, ctx.in_shape, ctx.geometry, ctx.order), None, None, None


def in_storage_order(g: Tensor, order) -> Tensor:
    """``g`` laid out as its base's storage: the tensor a storage geometry indexes (differentiable)."""
    return g.permute(*order).contiguous()


def _as_strided_scatter(g, shape, geometry, order):
    """zeros(shape), laid out in storage ``order``, with g added at the strided region ``geometry``:
    the elements of a broadcast dim (stride 0: an expanded view) are one storage element, whose
    gradient is their sum."""
    z = _zeros(tuple(shape[d] for d in order), g)
    size, stride, offset = geometry
    broadcast = tuple(d for d, (n, st) in enumerate(zip(size, stride)) if st == 0 and n > 1)
    if broadcast:
        g = g.sum(broadcast, keepdim=True)
        size = tuple(1 if d in broadcast else n for d, n in enumerate(size))
    if overlaps(size, stride):
        raise RuntimeError("tgrad: the gradient of as_strided through a view whose elements overlap in memory "
                           f"(size {tuple(geometry[0])}, stride {tuple(stride)}) is not supported")
    fused(M.identity, [g], g.dtype, out=wrap(z._data.as_strided(size, stride, offset)), compute=g.dtype)
    return z.permute(*_inverse(order))


def overlaps(size, stride) -> bool:
    """Whether two indices of the strided geometry reach one storage element."""
    extent = 0  # the storage span of the dims with smaller strides
    for st, n in sorted((abs(st), n) for n, st in zip(size, stride) if n > 1):
        if st <= extent:
            return True
        extent += (n - 1) * st
    return False


class AsStridedScatter(BuiltinFunction):
    """The backward of ``as_strided`` as a differentiable op: zeros with g at the region; its own
    gradient is the region of the incoming gradient (read from a copy in storage order, whose
    layout the geometry describes)."""
    node_name = "AsStridedBackwardBackward0"

    @staticmethod
    def forward(ctx, g, shape, geometry, order):
        ctx.geometry, ctx.order = geometry, order
        return _as_strided_scatter(g, shape, geometry, order)

    @staticmethod
    def backward(ctx, gg):
        return AsStrided.apply(in_storage_order(gg, ctx.order), *ctx.geometry), None, None, None


class CopySlices(Node):
    """The history of a base after an in-place op on one of its views: the view's region takes its
    gradient from the op's result, the rest flows to the base's previous history."""

    def __init__(self, base_edge, result_edge, geometry, order, base_meta, result_meta):
        super().__init__()
        self._next = (base_edge, result_edge)
        self.geometry, self.order = geometry, order
        self._input_meta = (base_meta, result_meta)
        self._output_meta = (base_meta + (False,),)

    def apply(self, g):
        # g split in two with differentiable ops (so create_graph records it): the region's
        # part for the op's result, the rest (g times a mask that is 0 on the region) for the base
        size, stride, offset = self.geometry
        if self._next[0][0] is not None and 0 not in size and any(st == 0 and n > 1 for n, st in zip(size, stride)):
            # an expanded view written in place (fill_, zero_): PyTorch's CopySlices copies the
            # gradient of the view's old value into the base's through the view's (overlapping)
            # geometry, and refuses to
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")
        g = in_storage_order(g, self.order)
        outside = torch.ones(tuple(g.shape), dtype=torch.bool, device=g.device)
        outside.as_strided(size, stride, offset).fill_(False)
        inverse = _inverse(self.order)  # selected, not multiplied: a NaN in the region stays there
        return Where.apply(wrap(outside), g, 0.0).permute(*inverse), AsStrided.apply(g, size, stride, offset)


def rebase_history(t: Tensor, result: Tensor):
    """``t`` takes ``result``'s value (copied into its storage) and, if recorded, its history."""
    node = result._grad_fn
    saved = list(getattr(node, "_saved", None) or ())
    # As PyTorch's in-place ops save: the op's own input (slot 0, its first operand) keeps its value
    # before the write; ``t`` saved as another operand (``a.mul_(a)``, a lerp weight) is the tensor
    # being written, so backward then reports the in-place change; a saved result is ``t`` after it.
    results = []
    own = 0 if saved and saved[0] is not None and saved[0].tensor is t else None
    for i, s in enumerate(saved):
        if i == own:
            old = Tensor._wrap(t._data.clone(memory_format=torch.contiguous_format))
            old._grad_fn, old._output_nr, old._requires_grad = t._grad_fn, t._output_nr, t._requires_grad
            saved[i] = Saved(old)
        elif s is not None and s.tensor is result:
            results.append(i)
    base = t._base
    base_edge = edge_of(base) if base is not None else None
    fused(M.identity, [result], t.dtype, out=t, compute=t.dtype)
    t._version.value += 1
    for i in results:
        saved[i] = Saved(t, saved[i].producer)
    if node is not None and getattr(node, "_saved", None):
        node._saved = tuple(saved)
    if node is None:
        return
    old_fn, old_nr = t._grad_fn, t._output_nr
    if base is None:
        t._grad_fn, t._output_nr, t._requires_grad = node, result._output_nr, True
        _move_retained(t, old_fn, old_nr)
        return
    order = storage_order(base)
    if order is None:
        raise RuntimeError("tgrad: an in-place op that needs a gradient on a view of a tensor whose elements are "
                           "not a permutation of a contiguous block is not supported; call .contiguous() first")
    geometry = _geometry(t, base)
    cs = CopySlices(base_edge, (node, result._output_nr), geometry, order, (base.shape, base.dtype, base.device),
                    (t.shape, t.dtype, t.device))
    old_base_fn, old_base_nr = base._grad_fn, base._output_nr
    base._grad_fn, base._output_nr, base._requires_grad = cs, 0, True
    _move_retained(base, old_base_fn, old_base_nr)  # b.retain_grad(); b[0] = v: b's grad is the new b's
    again = AsStrided.apply(base, *geometry)
    t._grad_fn, t._output_nr, t._requires_grad = again._grad_fn, 0, True
    t._view_version = t._version.value
    _move_retained(t, old_fn, old_nr)


def _move_retained(t: Tensor, old_fn, old_nr):
    """``t.retain_grad()`` follows ``t`` to its new version (PyTorch: the gradient of the value after
    the in-place op, not of the one before)."""
    if t._retains_grad and old_fn is not None and old_fn is not t._grad_fn:
        if old_fn._retained.get(old_nr) is not None and old_fn._retained[old_nr]() is t:
            del old_fn._retained[old_nr]
        t._grad_fn._retained[t._output_nr] = weakref.ref(t)
