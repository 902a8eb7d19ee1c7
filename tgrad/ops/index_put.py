"""``index_put``/``index_put_``: ``x[indices] = values`` (``accumulate``: added, repeated positions
adding up) through the plans and kernels of advanced indexing (``advanced.py``), with PyTorch's
argument checks in PyTorch's order."""
from __future__ import annotations

from .. import _dtype
from ..autograd.inplace_checks import check_inplace
from ..tensor import Tensor
from tgrad.kernels import elementwise as M
from .advanced import (advanced_setitem, check_index_bounds, check_no_index_into_an_empty_dim, check_value_shape,
                       resolve, value_operand)
from .formula import fused
from .inplace import check_no_overlap
from .registry import op


def _index_put_plan(name, x, indices, values, accumulate):
    """(plan, values) of ``x.index_put_(indices, values, accumulate)`` after PyTorch's checks, in
    its order: a tuple (or list) of index tensors, one for each leading dim (a bool mask for as many
    dims as it has); then memory shared with x (in place); the indices; an index into a dim of size
    0; values of a shape that broadcasts to the result's (no leading 1s dropped, unlike
    ``x[idx] = v``) and of x's dtype; last the indices' range. One mask and one value (not
    accumulated) is PyTorch's masked_fill_: any dtype, no memory check. 0-d integer indices are put
    as 1-element ones (the plan's result has a 1 more)."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"{name}(): argument 'indices' (position 1) must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    bad = next((k for k, i in enumerate(indices) if not isinstance(i, Tensor)), None)
    if bad is not None:
        raise TypeError(f"expected Tensor as element {bad} in argument 0, but got {type(indices[bad]).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"{name}(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if not isinstance(accumulate, bool):
        raise TypeError(f"{name}(): argument 'accumulate' must be bool, not {type(accumulate).__name__}")
    in_place = name.endswith("_")
    if in_place:  # (PyTorch's autograd refuses before its kernel looks at anything)
        check_inplace(x)
    if not indices:
        raise RuntimeError(f"{name}(): expected at least one index tensor")
    if len(indices) > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim} (got {len(indices)})")
    fill = not accumulate and len(indices) == 1 and indices[0].dtype in (_dtype.bool, _dtype.uint8) and \
        values.numel() == 1 and values.device.type == "cpu"
    if in_place and not fill:
        for t in (values, *indices):
            check_no_overlap(x._data, t._data)
    scalar = [i.ndim == 0 and i.dtype in (_dtype.int64, _dtype.int32) for i in indices]
    plan, _ = resolve(x, tuple(i.reshape(1) if one else i for i, one in zip(indices, scalar)), check_bounds=False)
    if fill:
        return plan, values if values.dtype is x.dtype else fused(M.identity, [values], x.dtype, compute=x.dtype)
    check_no_index_into_an_empty_dim(plan)
    check_value_shape(values, plan.shape[1:] if all(scalar) else plan.shape)
    if values.dtype is not x.dtype:
        value_operand(values, x, ())
    check_index_bounds(plan)
    return plan, values


@op("index_put_")
def index_put_(input, indices, values, accumulate=False):  # noqa: A002
    plan, values = _index_put_plan("index_put_", input, indices, values, accumulate)
    advanced_setitem(input, plan, values, accumulate)
    return input


@op("index_put")
def index_put(input, indices, values, accumulate=False):  # noqa: A002
    plan, values = _index_put_plan("index_put", input, indices, values, accumulate)
    out = input.clone()
    advanced_setitem(out, plan, values, accumulate)
    return out
