"""The random-number generator state and the factories whose values are computed by kernels.

tgrad's generator is counter-based (Philox): its whole state is ``(seed, offset)``. A draw of n
numbers uses counters ``offset .. offset+n`` and advances ``offset``; so ``manual_seed`` makes every
later draw reproducible, on the CPU and on CUDA alike.
"""
from __future__ import annotations

import math
import os
import struct
import threading

import torch

from .. import _dtype
from .._dtype import as_device
from tgrad.kernels import factories as KF
from tgrad.kernels.random import philox as KR
from tgrad.kernels.runtime.capture import is_capturing
from .factories import _dt, _new, _shape
from .common import broadcast_shapes
from .sorting import argsort
from ..modes import no_grad
from ..tensor import Tensor
from .registry import op


class GraphDraws:
    """The default generator while a graph captures: a draw takes counters *within the graph*
    (from 0), and its kernels add the base counter -- and take the key -- from ``state``, an int64
    (seed, offset) tensor on the graph's device that the graph sets before each replay. So replay k
    draws exactly what the k-th eager run of the block would have drawn."""

    def __init__(self, state: torch.Tensor):
        self.state, self.used = state, 0


_STATE_BYTES = 16


def _what(obj):
    return f"a {obj.dtype} tensor" if isinstance(obj, Tensor) else type(obj).__name__


_capturing = threading.local()  # .draws: {id(generator): GraphDraws} of this thread's graph capture


@op("Generator", method=False)
class Generator:
    def __init__(self, device="cpu"):
        self.device = torch.device(device)
        self._seed, self.offset = 67280421310721, 0

    @property
    def graph_draws(self):
        """A GraphDraws while a tgrad graph captures this generator *in this thread* (a capture is
        the capturing thread's: other threads keep drawing eagerly from ``offset``)."""
        return getattr(_capturing, "draws", {}).get(id(self))

    @graph_draws.setter
    def graph_draws(self, draws):
        table = _capturing.__dict__.setdefault("draws", {})
        if draws is None:
            table.pop(id(self), None)
        else:
            table[id(self)] = draws

    def manual_seed(self, seed):
        seed = int(seed)
        if not -(2 ** 63) <= seed < 2 ** 64:
            raise RuntimeError("Overflow when unpacking long long")
        self._seed, self.offset = seed % (2 ** 64), 0
        return self

    def seed(self):
        """Seed from the OS's entropy (as PyTorch's ``seed()``), returning the seed."""
        self.manual_seed(int.from_bytes(os.urandom(8), "little") % (2 ** 63))
        return self._seed

    def initial_seed(self):
        return self._seed

    def get_state(self):
        """The state as a uint8 tensor, as PyTorch's: here 16 bytes, the seed and the counter
        offset (little-endian uint64); PyTorch's Mersenne-Twister states are not interchangeable."""
        raw = bytearray(struct.pack("<QQ", self._seed, self.offset))
        return _new(torch.tensor(list(raw), dtype=torch.uint8))

    def set_state(self, new_state):
        if not isinstance(new_state, Tensor) or new_state.dtype is not _dtype.uint8:
            raise TypeError(f"RNG state must be a torch.ByteTensor, not {_what(new_state)}")
        if new_state.numel() != _STATE_BYTES:
            raise RuntimeError(f"Expected an RNG state of size {_STATE_BYTES} (tgrad's Philox seed and offset) "
                               f"but found the input RNG state size to be {new_state.numel()}")
        self._seed, self.offset = struct.unpack("<QQ", new_state._data.cpu().contiguous().numpy().tobytes())
        return self

    def take(self, used: int):
        """Return the offset to draw from, then move past the ``used`` counters (during a graph
        capture: the offset within the graph; the kernels read the rest from ``graph_state``)."""
        draws = self.graph_draws
        if draws is not None:
            start = draws.used
            draws.used += used
            return start
        if is_capturing():
            raise RuntimeError("random numbers drawn from a generator other than tgrad's default one cannot be "
                               "captured in a graph: its (seed, offset) would be frozen, so every replay would "
                               "draw the same numbers. Use the default generator inside a capture.")
        start = self.offset
        self.offset += used
        return start

    @property
    def graph_state(self):
        """The (seed, base offset) tensor captured random kernels read, or None outside a capture."""
        draws = self.graph_draws
        return None if draws is None else draws.state


default_generator = op("default_generator", method=False)(Generator())
default_generator.seed()  # as PyTorch's: a new seed per process until manual_seed


@op("manual_seed", method=False)
def manual_seed(seed):
    return default_generator.manual_seed(seed)


@op("seed", method=False)
def seed():
    return default_generator.seed()


@op("initial_seed", method=False)
def initial_seed():
    return default_generator.initial_seed()


def _draw(fill, out: torch.Tensor, generator, *args):
    gen = generator or default_generator
    offset = gen.take(KR.counters_for(out.numel()))
    fill(out, gen._seed, offset, *args, state=gen.graph_state)
    return out


def _float_dt(dtype, kernel="check_uniform_bounds"):
    dt = _dt(dtype)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dt.scalar_type}'")
    return dt


@op("rand", method=False)
def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    out = torch.empty(_shape(size), dtype=_float_dt(dtype).torch, device=as_device(device))
    return _new(_draw(KR.fill_uniform, out, generator), requires_grad)


@op("randn", method=False)
def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    out = torch.empty(_shape(size), dtype=_float_dt(dtype, "normal_kernel_cpu").torch, device=as_device(device))
    return _new(_draw(KR.fill_normal, out, generator), requires_grad)


@op("randint", method=False)
def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        high, size = None, high
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing required argument 'size'")
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    out = torch.empty(_shape((size,)), dtype=_dt(dtype, _dtype.int64).torch, device=as_device(device))
    return _new(_draw(KR.fill_randint, out, generator, int(low), int(high)), requires_grad)


@op("normal", method=False)
def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """N(mean, std^2) draws. Tensor ``mean``/``std`` give one draw per element of their broadcast
    shape: ``mean + std * z`` with z ~ N(0, 1) (computed by kernels, not tracked by autograd)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        shape = broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, Tensor)))
        with no_grad():
            z = randn(shape, generator=generator, dtype=like.dtype, device=like.device)
            return _new((mean + std * z)._data, requires_grad)
    out = torch.empty(_shape((size,)), dtype=_float_dt(dtype, "normal_kernel_cpu").torch, device=as_device(device))
    return _new(_draw(KR.fill_normal, out, generator, float(mean), float(std)), requires_grad)


# ---------------------------------------------------------------- in-place draws (Tensor methods)
# Each draws a fresh tensor (kernels) and writes it with copy_, so the in-place rules (a leaf that
# requires grad, views, version counters, dtype casts) are copy_'s, as PyTorch's are its own.

def _fill(input, sample):
    return input.copy_(sample)


def _like(input, kernel):
    return _float_dt(input.dtype, kernel), tuple(input.shape), input.device


def _fill_with(input, fill, kernel, generator, *args):
    """``input`` filled by the Philox kernel ``fill`` (drawn into a fresh tensor, then copied)."""
    dt, shape, device = _like(input, kernel)
    out = torch.empty(shape, dtype=dt.torch, device=device)
    return _fill(input, _new(_draw(fill, out, generator, *args)))


@op("uniform_", function=False)
def uniform_(input, from_=0.0, to=1.0, *, generator=None):  # noqa: A002
    """U[from, to)."""
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}")
    return _fill_with(input, KR.fill_uniform, "check_uniform_bounds", generator, float(from_), float(to))


@op("normal_", function=False)
def normal_(input, mean=0.0, std=1.0, *, generator=None):  # noqa: A002
    """N(mean, std^2)."""
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    return _fill_with(input, KR.fill_normal, "normal_kernel_cpu", generator, float(mean), float(std))


@op("log_normal_", function=False)
def log_normal_(input, mean=1.0, std=2.0, *, generator=None):  # noqa: A002
    """exp(N(mean, std^2))."""
    if std <= 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    dt, shape, device = _like(input, "log_normal_cpu")
    with no_grad():
        return _fill(input, normal(mean, std, shape, generator=generator, dtype=dt, device=device).exp())


@op("exponential_", function=False)
def exponential_(input, lambd=1.0, *, generator=None):  # noqa: A002
    """-log(1 - U) / lambd."""
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    dt, shape, device = _like(input, "exponential_cpu")
    with no_grad():
        return _fill(input, (1 - rand(shape, generator=generator, dtype=dt, device=device)).log() * (-1 / lambd))


@op("cauchy_", function=False)
def cauchy_(input, median=0.0, sigma=1.0, *, generator=None):  # noqa: A002
    """median + sigma * tan(pi (U - 1/2))."""
    if sigma <= 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    dt, shape, device = _like(input, "cauchy_cpu")
    with no_grad():
        u = rand(shape, generator=generator, dtype=dt, device=device)
        return _fill(input, ((u - 0.5) * math.pi).tan() * sigma + median)


@op("geometric_", function=False)
def geometric_(input, p, *, generator=None):  # noqa: A002
    """The trial of the first success, success probability p: ceil(log(1 - U) / log(1 - p))."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    with no_grad():
        u = rand(tuple(input.shape), generator=generator, dtype=_dtype.float64, device=input.device)
        return _fill(input, ((1 - u).log() / math.log1p(-p)).ceil().clamp(min=1))


@op("random_", function=False)
def random_(input, from_=0, to=None, *, generator=None):  # noqa: A002
    """Integers uniform in [from, to); ``random_(to)`` is [0, to); ``random_()`` [0, 2^mantissa]
    for floats (every integer the dtype holds exactly), [0, max] for integers."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        dt = input.dtype
        to = 2 ** round(1 - math.log2(torch.finfo(dt.torch).eps)) + 1 if dt.is_floating_point else (
            2 if dt is _dtype.bool else min(torch.iinfo(dt.torch).max + 1, 2 ** 63 - 1))  # int64's range, less its max
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    with no_grad():
        return _fill(input, randint(int(from_), int(to), tuple(input.shape), generator=generator,
                                    device=input.device))


@op("rand_like", method=False)
def rand_like(t, dtype=None, device=None, requires_grad=False):
    return rand(t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


@op("randn_like", method=False)
def randn_like(t, dtype=None, device=None, requires_grad=False):
    return randn(t.shape, dtype=dtype or t.dtype, device=device or t.device, requires_grad=requires_grad)


@op("randint_like", method=False)
def randint_like(t, low, high=None, dtype=None, device=None):
    return randint(low, high, t.shape, dtype=dtype or t.dtype, device=device or t.device)


@op("randperm", method=False)
def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation: sort random keys (the argsort runs in a kernel)."""
    keys = rand(n, generator=generator, dtype=_dtype.float64, device=device)
    return argsort(keys).to(_dt(dtype, _dtype.int64))


@op("arange", method=False)
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    if dtype is None:
        is_float = any(isinstance(v, float) for v in (start, end, step))
        dtype = _dtype.get_default_dtype() if is_float else _dtype.int64
    if _dt(dtype) is _dtype.int64:  # torch works an int64 range wholly in truncated integers
        if not all(math.isfinite(v) for v in (start, end, step)):
            raise RuntimeError(f"unsupported range: {start} -> {end}")
        start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (end - start) / step < 0 and end != start:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if all(isinstance(v, int) for v in (start, end, step)):
        n = max(0, -((start - end) // step))  # exact ceil for big integers
    else:
        n = max(0, math.ceil((end - start) / step))
    out = torch.empty((n,), dtype=_dt(dtype).torch, device=as_device(device))
    return _new(KF.arange(out, start, step), requires_grad)


@op("linspace", method=False)
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    out = torch.empty((steps,), dtype=_dt(dtype).torch, device=as_device(device))
    return _new(KF.linspace(out, start, end, steps), requires_grad)


@op("eye", method=False)
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    out = torch.empty((n, n if m is None else m), dtype=_dt(dtype).torch, device=as_device(device))
    return _new(KF.eye(out), requires_grad)
