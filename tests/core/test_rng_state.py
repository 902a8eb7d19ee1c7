"""tgrad.random: the default generator's state, restoring it, fork_rng and per-process seeding."""
import subprocess
import sys

import pytest
import torch

import tgrad


def test_a_restored_state_draws_the_same_numbers_again():
    tgrad.manual_seed(11)
    tgrad.rand(5)
    state = tgrad.get_rng_state()
    assert state.dtype is tgrad.uint8 and state.dim() == 1
    first = [tgrad.rand(3, 4).tolist(), tgrad.randn(7).tolist(), tgrad.randint(0, 9, (6,)).tolist()]
    tgrad.set_rng_state(state)
    again = [tgrad.rand(3, 4).tolist(), tgrad.randn(7).tolist(), tgrad.randint(0, 9, (6,)).tolist()]
    assert first == again
    assert tgrad.random.get_rng_state is tgrad.get_rng_state


def test_generator_state_round_trips_and_is_independent_of_the_default():
    g = tgrad.Generator().manual_seed(3)
    state = g.get_state()
    a = tgrad.rand(4, generator=g).tolist()
    tgrad.rand(9)  # the default generator moves; g does not
    g.set_state(state)
    assert tgrad.rand(4, generator=g).tolist() == a
    assert tgrad.Generator().initial_seed() == torch.Generator().initial_seed()  # PyTorch's fixed default


def test_fork_rng_restores_the_state_on_leaving_even_after_an_error():
    tgrad.manual_seed(2)
    expected = tgrad.rand(3).tolist()
    tgrad.manual_seed(2)
    with pytest.raises(KeyError):
        with tgrad.random.fork_rng():
            tgrad.rand(100)
            raise KeyError("inside")
    assert tgrad.rand(3).tolist() == expected
    tgrad.manual_seed(2)
    with tgrad.random.fork_rng(enabled=False):
        tgrad.rand(1)
    assert tgrad.rand(3).tolist() != expected


def test_bad_states_get_torchs_exception_types():
    for bad in ([1, 2], torch.zeros(16, dtype=torch.uint8)):
        with pytest.raises(TypeError) as theirs:
            torch.set_rng_state(bad if isinstance(bad, list) else bad.float())
        with pytest.raises(TypeError, match="ByteTensor"):
            tgrad.set_rng_state(bad if isinstance(bad, list) else tgrad.zeros(16))
        assert "ByteTensor" in str(theirs.value)
    with pytest.raises(RuntimeError):
        torch.set_rng_state(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="size 16"):
        tgrad.set_rng_state(tgrad.zeros(3, dtype=tgrad.uint8))


def test_each_process_is_seeded_afresh_as_in_pytorch():
    code = "import tgrad; print(tgrad.initial_seed(), tgrad.rand(2).tolist())"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs[0] != runs[1]
    seeded = "import tgrad; tgrad.manual_seed(1); print(tgrad.rand(2).tolist())"
    runs = [subprocess.run([sys.executable, "-c", seeded], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs[0] == runs[1]


def test_cuda_rng_state_needs_cuda_as_in_pytorch():
    if torch.cuda.is_available():
        state = tgrad.cuda.get_rng_state()
        tgrad.cuda.set_rng_state(state)
        assert len(tgrad.cuda.get_rng_state_all()) == torch.cuda.device_count()
    else:
        with pytest.raises(RuntimeError, match="CUDA"):
            tgrad.cuda.get_rng_state()
        tgrad.cuda.seed_all()  # a no-op without CUDA, as in PyTorch
