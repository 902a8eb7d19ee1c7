"""``torch.nn.utils.clip_grad_norm_`` / ``clip_grad_value_`` from tgrad ops (a norm per gradient,
the norm of those norms, one scale per gradient, all kernels; no host round trip unless
``error_if_nonfinite``)."""
from __future__ import annotations

import tgrad

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters):
    if isinstance(parameters, tgrad.Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients in place so their joint ``norm_type`` norm is at most ``max_norm``;
    returns the total norm before clipping (a 0-d tensor)."""
    grads = _grads(parameters)
    if not grads:
        return tgrad.tensor(0.0)
    norm_type = float(norm_type)
    with tgrad.no_grad():
        norms = [g.abs().amax() if norm_type == float("inf") else g.norm(norm_type) for g in grads]
        stacked = tgrad.stack(norms)
        total = stacked.amax() if norm_type == float("inf") else stacked.norm(norm_type)
        if error_if_nonfinite and not bool(tgrad.isfinite(total).item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               f"so it cannot be clipped. To disable this error and scale the gradients by the "
                               f"non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element into [-clip_value, clip_value] in place."""
    with tgrad.no_grad():
        for g in _grads(parameters):
            g.clamp_(-float(clip_value), float(clip_value))
