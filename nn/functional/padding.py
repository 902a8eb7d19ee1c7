"""``F.pad`` (constant, reflect, replicate, circular) as an autograd Function over
``tgrad.kernels.indexing.pad``: one gather launch forward, one gather launch backward (the adjoint).

The backward is linear in g and its adjoint is the padding again: the backward is the Function
``PadBackward`` (the gather launch) whose own backward is ``Pad``, so every order runs the same
two kernels and the derivative is written once.
"""
from __future__ import annotations

from tgrad.autograd.function import BuiltinFunction
from tgrad.kernels.indexing import pad as PAD
from tgrad.ops.common import check_runnable, wrap
from tgrad.tensor import Tensor

__all__ = ["pad"]

_NAMES = {"constant": "ConstantPadNd", "reflect": "ReflectionPad{k}D", "replicate": "ReplicationPad{k}D",
          "circular": "CircularPad{k}D"}


class Pad(BuiltinFunction):
    edge_args = (0,)

    @staticmethod
    def forward(ctx, x, pads, mode, value):
        check_runnable(x)
        ctx.cfg = (tuple(x.shape), pads, mode)
        return wrap(PAD.pad_forward(x._data, pads, mode, value))

    @staticmethod
    def backward(ctx, g):
        shape, pads, mode = ctx.cfg
        return _apply(PadBackward, mode, len(pads), g, shape, pads, mode), None, None, None


class PadBackward(BuiltinFunction):
    """dx = pad's adjoint applied to g, as an op of g; its gradient is the padding of gg."""
    edge_args = (0,)

    @staticmethod
    def forward(ctx, g, shape, pads, mode):
        ctx.cfg = (pads, mode)
        return wrap(PAD.pad_backward(g._data, shape, pads, mode))

    @staticmethod
    def backward(ctx, gg):
        pads, mode = ctx.cfg
        return _apply(Pad, mode, len(pads), gg, pads, mode, 0.0), None, None, None


_CLASSES = {}


def _apply(base, mode, k, *args):
    """base.apply under the node name PyTorch gives this mode and padded rank."""
    name = _NAMES[mode].format(k=k) + ("Backward0" if base is Pad else "BackwardBackward0")
    cls = _CLASSES.get(name)
    if cls is None:
        cls = _CLASSES[name] = type(name.replace("0", ""), (base,), {"node_name": name})
    return cls.apply(*args)


def _check_pad(input, pad, mode, value):
    if not isinstance(input, Tensor):
        raise TypeError(f"pad(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    if not isinstance(pad, (tuple, list)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not {type(pad).__name__}")
    for i, p in enumerate(pad):
        if isinstance(p, bool) or not isinstance(p, int):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                            f"{type(p).__name__} at pos {i}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.ndim}")
    if mode not in PAD.MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        k = len(pad) // 2
        if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
            raise NotImplementedError(
                f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
                "Supported combinations for non-constant padding:\n"
                "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
        first = 1 if input.ndim == k + 2 else 0  # a batch dim may be empty, no other
        if any(s == 0 for s in input.shape[first:]):
            raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and "
                               f"other non-zero dimensions for input, but got: {list(input.shape)}")


def pad(input, pad, mode="constant", value=None):
    return _pad(input, pad, mode, value)


def _pad(input, pad, mode, value):
    """Pad the last len(pad)/2 dims of input: pad = (left, right) of the last dim, then (top,
    bottom) of the one before, and so on. constant fills ``value`` (0 by default; negative amounts
    crop), reflect mirrors without repeating the edge, replicate repeats the edge, circular wraps."""
    _check_pad(input, pad, mode, value)
    k = len(pad) // 2
    pads = tuple((pad[2 * (k - 1 - d)], pad[2 * (k - 1 - d) + 1]) for d in range(k))  # first padded dim first
    for d, (before, after) in enumerate(pads):
        dim = input.ndim - k + d
        size = input.shape[dim]
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {dim} of input "
                               f"{list(input.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if size + before + after < 0:
            if mode == "constant":
                raise RuntimeError("narrow(): length must be non-negative.")
            raise RuntimeError(f"input tensor is too small for the negative padding ({before}, {after}) at "
                               f"dimension {dim}")
    if k == 0:
        return input.clone()
    if mode == "circular" and min(pad) < 0:  # PyTorch crops first, then wraps the cropped tensor
        index = (Ellipsis,) + tuple(slice(max(-b, 0), input.shape[input.ndim - k + d] - max(-a, 0))
                                    for d, (b, a) in enumerate(pads))
        return _pad(input[index], [max(p, 0) for p in pad], mode, value)
    value = 0.0 if value is None else value
    if k > 3:  # constant only: the last three dims in one launch, then the others with those folded
        inner = _apply(Pad, mode, 3, input, pads[-3:], mode, value)
        folded = inner.reshape(tuple(inner.shape[:inner.ndim - 3]) + (-1,))
        out = _pad(folded, [0, 0] + list(pad[6:]), mode, value)
        return out.reshape(tuple(out.shape[:out.ndim - 1]) + tuple(inner.shape[inner.ndim - 3:]))
    return _apply(Pad, mode, k, input, pads, mode, value)


pad.__doc__ = _pad.__doc__
