"""``tgrad.multinomial`` / ``Tensor.multinomial``: category indices drawn from rows of weights by
the Philox kernel of ``kernels/multinomial.py`` (PyTorch's signature and errors)."""
from __future__ import annotations

from tgrad.kernels.random import multinomial as KM
from tgrad.kernels.random.philox import counters_for
from .common import check_runnable, wrap
from .random import default_generator
from .registry import op

_STATUS = {
    1: "probability tensor contains either `inf`, `nan` or element < 0",
    2: "invalid multinomial distribution (sum of probabilities <= 0)",
    3: "invalid multinomial distribution (with replacement=False, not enough non-negative category to sample)",
}


@op("multinomial")
def multinomial(input, num_samples, replacement=False, *, generator=None):
    check_runnable(input)
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype.name.capitalize()}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    C = input.shape[-1]
    if C == 0:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if not replacement and num_samples > C:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    w = input._data if input.ndim == 2 else input._data.unsqueeze(0)
    gen = generator or default_generator
    replace = replacement or num_samples == 1
    offset = gen.take(counters_for(w.shape[0] * (num_samples if replace else C)))
    out, status = KM.multinomial(w, int(num_samples), bool(replacement), gen._seed, offset, gen.graph_state)
    if status.numel():
        worst = int(status.max().item()) if status.numel() > 1 else int(status.item())
        if worst:
            raise RuntimeError(_STATUS[worst])
    return wrap(out if input.ndim == 2 else out.squeeze(0))


