"""``scaled_dot_product_attention`` on the fused kernel of ``kernels/attention.py`` and
``multi_head_attention_forward`` (what ``nn.MultiheadAttention`` runs), with PyTorch's signatures.

SDPA keeps only (B, H, L) row statistics between forward and backward, never the (L, S) weights;
its dropout mask is Philox-regenerated from (seed, offset). The backward is a ``FusedBackward``:
the fused kernel, whose own derivative (double backward), and the gradient of a float mask that
requires grad (the kernel has none), come from the composed form (``_sdpa_composed``: matmul,
softmax, dropout with the same (seed, offset), so it draws the same mask) differentiated by
autograd, as PyTorch's math backend.
"""
from __future__ import annotations

import math

import tgrad
from tgrad.amp.autocast_mode import autocast_policy
from tgrad.autograd.function import BuiltinFunction
from tgrad.autograd.fused_backward import composed_grads, fused_backward
from tgrad.kernels import attention as KA
from tgrad.kernels.random import dropout as KD
from tgrad.ops.common import check_runnable, wrap
from tgrad.ops.random import default_generator
from tgrad.tensor import Tensor

from .dense import linear
from .stochastic import _Dropout, dropout

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


class _Attention(BuiltinFunction):
    node_name = "ScaledDotProductFlashAttentionBackward0"

    @staticmethod
    def forward(ctx, q, k, v, mask, kind, causal, scale, p, seed, offset, state):
        check_runnable(q, k, v, mask)
        md = None if mask is None else mask._data
        o, lse = KA.attention_forward(q._data, k._data, v._data, md, kind, causal, scale, p, seed, offset, state)
        ctx.cfg = (kind, causal, scale, p, seed, offset, state)
        ctx.lse = lse
        out = wrap(o)
        ctx.save_for_backward(q, k, v, mask, out)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, mask, o = ctx.saved_tensors
        cfg = ctx.cfg
        need = ctx.needs_input_grad[:4]

        def recorded(g, q, k, v, mask):  # differentiate the composed form of the same attention
            return composed_grads(lambda q, k, v, mask: _sdpa_composed(q, k, v, mask, *cfg), (q, k, v, mask), need,
                                  (g,))

        def kernel(g, q, k, v, mask):
            if need[3]:  # the kernel has no gradient of a float mask: the composed form gives all four
                return tuple(None if d is None else d.detach() for d in recorded(g, q, k, v, mask))
            dq, dk, dv = KA.attention_backward(q._data, k._data, v._data, o._data, ctx.lse, g._data,
                                               None if mask is None else mask._data, *cfg, need_dq=need[0],
                                               need_dkv=need[1] or need[2])
            return (wrap(dq) if need[0] else None, wrap(dk) if need[1] else None, wrap(dv) if need[2] else None,
                    None)

        return fused_backward(ctx, kernel, recorded, g, q, k, v, mask) + (None,) * 7


def _repeat_heads(t, group):
    if group == 1:
        return t
    B, HK, S, E = t.shape
    return t.unsqueeze(2).expand(B, HK, group, S, E).reshape(B, HK * group, S, E)


def _sdpa_composed(q, k, v, mask, kind, causal, scale, p, seed, offset, state):
    """The same attention from differentiable tgrad ops (materialises the (L, S) weights)."""
    group = q.shape[1] // k.shape[1]
    s = (q @ _repeat_heads(k, group).transpose(-2, -1)) * scale
    L, S = s.shape[-2], s.shape[-1]
    allowed = None
    if causal:
        allowed = tgrad.ones(L, S, dtype=tgrad.bool, device=q.device).tril()
    if kind == KA.MASK_BOOL:
        allowed = mask if allowed is None else tgrad.logical_and(mask, allowed)
    elif kind == KA.MASK_ADD:
        s = s + mask
    if allowed is not None:
        s = s.masked_fill(allowed.logical_not(), float("-inf"))
    # a row with no finite logit gives 0 (PyTorch's safe softmax), not NaN
    dead = (s == float("-inf")).all(-1, keepdim=True)
    attn = s.masked_fill(dead, 0.0).softmax(-1).masked_fill(dead, 0.0)
    if p > 0:
        attn = _Dropout.apply(attn, p, seed, offset, state)
    return attn @ _repeat_heads(v, group)


def _check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa):
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_dot_product_attention(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must be at least 2-dimensional")
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if not query.dtype.is_floating_point:
        raise RuntimeError(f"scaled_dot_product_attention: expected floating point inputs, got {query.dtype}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"Expected query and key to have the same embedding dimension, got {query.shape[-1]} "
                           f"and {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"Expected key and value to have the same sequence length, got {key.shape[-2]} and "
                           f"{value.shape[-2]}")
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if attn_mask is not None and not (attn_mask.dtype is tgrad.bool or attn_mask.dtype.is_floating_point):
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                           f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")


@autocast_policy(cpu='lower', cuda='lower')
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q k^T * scale + mask) v over the last two dims of q (..., L, E), k (..., S, E),
    v (..., S, Ev); a boolean ``attn_mask`` marks the pairs that take part (True), a float one is
    added; ``is_causal`` lets query i see keys j <= i; ``enable_gqa`` lets Hq be a multiple of Hk."""
    _check(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    *batch, L, E = query.shape
    S, EV = key.shape[-2], value.shape[-1]
    if tuple(key.shape[:-3]) != tuple(batch[:-1]) or tuple(value.shape[:-2]) != tuple(key.shape[:-2]) or \
            (query.ndim >= 3 and key.ndim != query.ndim):
        raise RuntimeError(f"scaled_dot_product_attention: query {list(query.shape)}, key {list(key.shape)} and "
                           f"value {list(value.shape)} have different batch dimensions")
    hq = batch[-1] if batch else 1
    hk = key.shape[-3] if key.ndim >= 3 else 1
    if hq != hk:
        if not enable_gqa:
            raise RuntimeError(f"The size of tensor a ({hq}) must match the size of tensor b ({hk}) at "
                               f"non-singleton dimension {query.ndim - 3}")
        if hq % hk:
            raise RuntimeError(f"number of heads in key/value must divide the number of heads in query "
                               f"({hk} does not divide {hq})")
    nb = math.prod(batch[:-1]) if len(batch) > 1 else 1
    # 4-d operands are the kernel's layout already: no view nodes between them and the attention's
    q = query if query.ndim == 4 else query.reshape(nb, hq, L, E)
    k = key if key.ndim == 4 else key.reshape(nb, hk, S, E)
    v = value if value.ndim == 4 else value.reshape(nb, hk, S, EV)
    scale = 1.0 / math.sqrt(E) if scale is None else float(scale)
    kind, mask = KA.MASK_NONE, None
    if attn_mask is not None:
        kind = KA.MASK_BOOL if attn_mask.dtype is tgrad.bool else KA.MASK_ADD
        full = tuple(batch) + (L, S)
        try:
            mask = attn_mask.expand(*full).reshape(nb, hq, L, S)
        except RuntimeError:
            raise RuntimeError(f"The size of attn_mask {list(attn_mask.shape)} cannot be broadcast to the "
                               f"attention weights' {list(full)}") from None
        if kind == KA.MASK_ADD and mask.dtype is not query.dtype:
            mask = mask.to(query.dtype)
    p = float(dropout_p)
    seed = offset = 0
    state = None
    if p > 0:
        seed, offset = default_generator._seed, default_generator.take(KD.counters_for(nb * hq * L * S))
        state = default_generator.graph_state
    out = _Attention.apply(q, k, v, mask, kind, bool(is_causal), scale, p, seed, offset, state)
    return out if query.ndim == 4 else out.reshape(*batch, L, EV)


def _merge_masks(attn_mask, key_padding_mask, N, H, L, S, dtype):
    """MultiheadAttention's masks (bool True = may NOT attend; float = added) as one SDPA mask
    (bool True = may attend, or float added), broadcastable to (N, H, L, S)."""
    masks = []
    if attn_mask is not None:
        m = attn_mask
        if m.ndim == 2:
            if tuple(m.shape) != (L, S):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(m.shape)}, but should be {(L, S)}.")
            m = m.reshape(1, 1, L, S)
        elif m.ndim == 3:
            if tuple(m.shape) != (N * H, L, S):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(m.shape)}, but should be "
                                   f"{(N * H, L, S)}.")
            m = m.reshape(N, H, L, S)
        else:
            raise RuntimeError(f"attn_mask's dimension {m.ndim} is not supported")
        masks.append(m)
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (N, S):
            raise RuntimeError(f"expected shape of key_padding_mask to be {(N, S)}, but got "
                               f"{tuple(key_padding_mask.shape)}")
        masks.append(key_padding_mask.reshape(N, 1, 1, S))
    if not masks:
        return None
    if all(m.dtype is tgrad.bool for m in masks):
        allowed = masks[0].logical_not()
        for m in masks[1:]:
            allowed = tgrad.logical_and(allowed, m.logical_not())
        return allowed
    total = None
    for m in masks:
        f = tgrad.zeros(m.shape, dtype=dtype, device=m.device).masked_fill(m, float("-inf")) \
            if m.dtype is tgrad.bool else m.to(dtype)
        total = f if total is None else total + f
    return total


def multi_head_attention_forward(query, key, value, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
                                 add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """PyTorch's F.multi_head_attention_forward for (L, N, E) inputs (or unbatched (L, E))."""
    batched = query.ndim == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    causal = is_causal and key_padding_mask is None and not need_weights
    if causal:  # as PyTorch: the hint stands for the mask, and the attention runs causal without reading it
        attn_mask = None
    L, N, E = query.shape
    if E % num_heads:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    hd = E // num_heads
    if not use_separate_proj_weight and query is key and key is value:
        q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    else:  # (the packed weight's pieces only here: views of a parameter are recorded nodes)
        if not use_separate_proj_weight:
            wq, wk, wv = in_proj_weight.chunk(3, 0)
        else:
            wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
        bq, bk, bv = in_proj_bias.chunk(3, 0) if in_proj_bias is not None else (None, None, None)
        q, k, v = linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)
    if bias_k is not None:
        k = tgrad.cat([k, bias_k.expand(1, N, E)], 0)
        v = tgrad.cat([v, bias_v.expand(1, N, E)], 0)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    if add_zero_attn:
        k = tgrad.cat([k, tgrad.zeros(1, N, E, dtype=k.dtype, device=k.device)], 0)
        v = tgrad.cat([v, tgrad.zeros(1, N, E, dtype=v.dtype, device=v.device)], 0)
        attn_mask = None if attn_mask is None else _pad_last(attn_mask)
        key_padding_mask = None if key_padding_mask is None else _pad_last(key_padding_mask)
    S = k.shape[0]

    def heads(t, n):
        return t.reshape(n, N, num_heads, hd).permute(1, 2, 0, 3)  # (N, H, n, hd)

    q, k, v = heads(q, L), heads(k, S), heads(v, S)
    mask = _merge_masks(attn_mask, key_padding_mask, N, num_heads, L, S, q.dtype)
    p = dropout_p if training else 0.0
    weights = None
    if need_weights:  # the weights themselves are asked for: the composed form
        s = (q * (1.0 / math.sqrt(hd))) @ k.transpose(-2, -1)
        if mask is not None:
            s = s.masked_fill(mask.logical_not(), float("-inf")) if mask.dtype is tgrad.bool else s + mask
        weights = s.softmax(-1)
        weights = dropout(weights, p) if p > 0 else weights  # PyTorch returns them after dropout
        out = weights @ v
        weights = weights.mean(1) if average_attn_weights else weights
        if not batched:
            weights = weights.squeeze(0)
    else:
        out = scaled_dot_product_attention(q, k, v, mask, p, causal)
    out = out.permute(2, 0, 1, 3).reshape(L * N, E)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(L, N, E)
    if not batched:
        out = out.squeeze(1)
    return out, weights


def _pad_last(m):
    """One more (allowed) key column: False for bool masks, 0 for float ones."""
    pad = tgrad.zeros(tuple(m.shape[:-1]) + (1,), dtype=m.dtype, device=m.device)
    return tgrad.cat([m, pad], -1)
