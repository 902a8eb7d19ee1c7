"""``ctc_loss``: the connectionist temporal classification loss, composed from tgrad ops.

Over the extended label sequence l' (the target with a blank before, between and after its labels,
length 2 S + 1), the forward variables in log space

    alpha_0[s] = lp[0, l'_s] for s <= 1;
    alpha_t[s] = logsumexp(alpha_{t-1}[s], alpha_{t-1}[s-1], alpha_{t-1}[s-2] if l'_s is a label
                           unlike l'_{s-2}) + lp[t, l'_s]

run one time step at a time over the whole batch (a handful of launches per step: the recursion is
sequential in t, and each step is a few elementwise ops and one logsumexp over the (N, 2 S + 1)
states), a sample's states frozen once t passes its input length. The loss is
-logsumexp(alpha_{T-1}[2 S], alpha_{T-1}[2 S - 1]). Composing it lets autograd derive the backward
(the beta recursion's role) and every higher order from the same ops; a kernel per time step would
save launches but need its own derivative. Impossible paths carry a large finite negative instead
of -inf, so that no gradient meets inf - inf; a loss that stays at that level is +inf, as in PyTorch.
"""
from __future__ import annotations

from tgrad import ops
from tgrad.amp.autocast_mode import autocast_policy
from tgrad.tensor import Tensor

from .loss import reduction_of

__all__ = ["ctc_loss"]

_NEG = -1e30  # "log 0" that stays finite in float32 and float64
_IMPOSSIBLE = -1e29


def _lengths(value):
    if isinstance(value, Tensor):
        return [int(v) for v in value.reshape(-1).tolist()]
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def _labels(targets, target_lengths):
    """Each sample's labels as Python lists: targets padded (N, S), or concatenated (sum of S_n,)."""
    flat = [int(v) for v in targets.reshape(-1).tolist()]
    if targets.ndim == 1:
        out, at = [], 0
        for tl in target_lengths:
            out.append(flat[at:at + tl])
            at += tl
        return out
    width = targets.shape[1]
    for tl in target_lengths:
        if tl > width:
            raise RuntimeError(f"Expected tensor to have size at least {tl} at dimension 1, but got size {width} for "
                               "argument #2 'targets' (while checking arguments for ctc_loss_allocate_outputs)")
    return [flat[n * width:n * width + tl] for n, tl in enumerate(target_lengths)]


@autocast_policy(cpu='fp32')  # (on CPU's float32 list, not on CUDA's)
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """The CTC loss of log-probabilities (T, N, C) (or (T, C)) against targets (N, S), concatenated
    (sum of target_lengths,) or (S,) unbatched; 'mean' divides each sample's loss by its target
    length before averaging over the batch."""
    reduction = reduction_of(reduction)
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    in_lens, tgt_lens = _lengths(input_lengths), _lengths(target_lengths)
    for v in in_lens:
        if v > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value {v} (while checking "
                               "arguments for ctc_loss_allocate_outputs)")
    labels = _labels(targets.unsqueeze(0) if unbatched else targets, tgt_lens)
    S = max(tgt_lens, default=0)
    L = 2 * S + 1
    ext = [[blank if s % 2 == 0 or s // 2 >= len(lab) else lab[s // 2] for s in range(L)] for lab in labels]
    skip = [[s >= 2 and s % 2 == 1 and row[s] != row[s - 2] for s in range(L)] for row in ext]
    dev, dt = lp.device, lp.dtype
    ext_t = ops.tensor(ext, device=dev)
    skip_t = ops.tensor(skip, device=dev)
    emit = lp.gather(2, ext_t.unsqueeze(0).expand(T, N, L))  # (T, N, L): lp[t, n, l'_s]
    neg = ops.full((N, L), _NEG, dtype=dt, device=dev)
    start = ops.tensor([[s <= 1 for s in range(L)]] * N, device=dev)
    alpha = ops.where(start, emit[0], neg)
    pad1 = ops.full((N, 1), _NEG, dtype=dt, device=dev)
    pad2 = ops.full((N, 2), _NEG, dtype=dt, device=dev)
    running = ops.tensor(in_lens, device=dev).unsqueeze(1)
    for t in range(1, T):
        prev1 = ops.cat([pad1, alpha[:, :L - 1]], 1)
        prev2 = ops.where(skip_t, ops.cat([pad2, alpha[:, :max(L - 2, 0)]], 1)[:, :L], neg)
        step = ops.stack([alpha, prev1, prev2], 0).logsumexp(0) + emit[t]
        alpha = ops.where(running > t, step, alpha)
    ends = ops.tensor([[2 * tl, max(2 * tl - 1, 0)] for tl in tgt_lens], device=dev)
    last = alpha.gather(1, ends)
    # a target of length 0 ends in state 0 only
    last = ops.where(ops.tensor([[False, tl == 0] for tl in tgt_lens], device=dev), ops.full_like(last, _NEG), last)
    nll = -last.logsumexp(1)
    impossible = nll > -_IMPOSSIBLE
    if zero_infinity:
        nll = ops.where(impossible, ops.zeros_like(nll), nll)
    else:
        nll = ops.where(impossible, ops.full_like(nll, float("inf")), nll)
    if unbatched:
        nll = nll.reshape(())
    if reduction == "mean":
        lengths = ops.tensor(tgt_lens, dtype=dt, device=dev).clamp(min=1)
        return (nll / lengths.reshape(nll.shape)).mean()
    return nll.sum() if reduction == "sum" else nll
