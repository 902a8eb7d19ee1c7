"""The misuse catalog, optim and data: optimizer and scheduler arguments, checkpoints, data loading;
and optimizer edge cases that do not raise.
One row per misuse; the runner and what a row asserts: support/misuse.py."""
import io

import pytest
import torch

import tgrad
import tgrad.nn as tnn
from support.checkpoints import saved_bytes as _save_bytes
from support.misuse import A, E, I, PARAMS, T_, V, check_misuse, leaf, mlp, ones, rows


def _load_mismatched(T):
    src = T.nn.Sequential(T.nn.Linear(4, 3), T.nn.ReLU(), T.nn.Linear(3, 5))
    state = dict(src.state_dict())
    state["9.extra"] = state["0.bias"]
    del state["0.bias"]
    mlp(T).load_state_dict(state)


def _load_bytes(raw):
    return tgrad.load(io.BytesIO(raw))


def _truncated():
    raw = _save_bytes({"w": tgrad.ones(10)})
    _load_bytes(raw[:-8])


def _not_a_checkpoint():
    _load_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!")


def _optim_groups_mismatch(T):
    a, b = leaf(T, 2), leaf(T, 2)
    saved = T.optim.SGD([a, b], lr=0.1).state_dict()
    T.optim.SGD([a], lr=0.1).load_state_dict(saved)


def _collate_unequal(T):
    class Ragged(T.utils.data.Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return T.ones(2 + i)
    next(iter(T.utils.data.DataLoader(Ragged(), batch_size=2)))


# (id, call(T), exception, pattern the message contains, runs against torch too[, kind])
CASES = [
    # -- optim
    ("sgd-negative-lr", lambda T: T.optim.SGD([leaf(T, 2)], lr=-0.1), V, r"Invalid learning rate: -0.1", True),
    ("adam-negative-lr", lambda T: T.optim.Adam([leaf(T, 2)], lr=-1e-3), V, r"Invalid learning rate: -0.001", True),
    ("adam-beta", lambda T: T.optim.Adam([leaf(T, 2)], betas=(0.9, 1.0)), V,
     r"Invalid beta parameter at index 1: 1.0", True),
    ("adam-eps", lambda T: T.optim.Adam([leaf(T, 2)], eps=-1.0), V, r"Invalid epsilon value: -1.0", True),
    ("sgd-weight-decay", lambda T: T.optim.SGD([leaf(T, 2)], lr=0.1, weight_decay=-1), V,
     r"Invalid weight_decay value: -1", True),
    ("sgd-momentum", lambda T: T.optim.SGD([leaf(T, 2)], lr=0.1, momentum=-0.5), V,
     r"Invalid momentum value: -0.5", True),
    ("sgd-nesterov", lambda T: T.optim.SGD([leaf(T, 2)], lr=0.1, nesterov=True), V,
     r"Nesterov momentum requires a momentum and zero dampening", True),
    ("optim-empty", lambda T: T.optim.SGD([], lr=0.1), V, r"optimizer got an empty parameter list", True),
    ("optim-tensor", lambda T: T.optim.SGD(leaf(T, 2), lr=0.1), T_,
     r"params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
     r"(torch|tgrad)\.FloatTensor", True),
    ("optim-non-leaf", lambda T: T.optim.SGD([leaf(T, 2) * 2], lr=0.1), V, r"can't optimize a non-leaf Tensor", True),
    ("optim-not-tensor", lambda T: T.optim.SGD([1.0], lr=0.1), T_,
     r"optimizer can only optimize Tensors, but one of the params is builtins.float", True),
    ("optim-set", lambda T: T.optim.SGD([{"params": {leaf(T, 2)}}], lr=0.1), T_,
     r"optimizer parameters need to be organized in ordered collections", True),
    ("optim-duplicate-groups",
     lambda T: (lambda p: T.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1))(leaf(T, 2)),
     V, r"some parameters appear in more than one parameter group", True),
    ("optim-load-groups", _optim_groups_mismatch, V,
     r"loaded state dict contains a parameter group that doesn't match the size of optimizer's group", True),
    ("scheduler-not-optimizer", lambda T: T.optim.lr_scheduler.StepLR(mlp(T), step_size=1), T_,
     r"Sequential is not an Optimizer", True),
    # -- checkpoints
    ("load-state-dict", _load_mismatched, E,
     r'Missing key\(s\) in state_dict: "0\.bias"\..*Unexpected key\(s\) in state_dict: "9\.extra"\..*size mismatch for '
     r"2\.weight: copying a param with shape (torch|tgrad)\.Size\(\[5, 3\]\) from checkpoint, the shape in current "
     r"model is (torch|tgrad)\.Size\(\[2, 3\]\)", True),
    ("load-truncated", lambda T: _truncated(), E,
     r"the file is truncated: tensor 'w' ends at byte 40 of the data but the "
                                                  r"data has 32 bytes", False),
    ("load-garbage", lambda T: _not_a_checkpoint(), E, r"not a valid tgrad/safetensors checkpoint \(the header is not "
                                                       r"valid JSON", False),
    ("load-missing-file", lambda T: T.load("/nonexistent/dir/ckpt.safetensors"), FileNotFoundError,
     r"No such file or directory: '/nonexistent/dir/ckpt.safetensors'", False),
    ("save-object", lambda T: tgrad.save({"model": tnn.Linear(2, 2)}, io.BytesIO()), T_,
     r"not Linear objects", False),
    ("save-key-type", lambda T: tgrad.save({frozenset([1]): tgrad.ones(1)}, io.BytesIO()), T_,
     r"dict keys must be str, int, float, bool, None or tuples of them, got frozenset", False),
    # -- data loading
    ("loader-batch-size", lambda T: T.utils.data.DataLoader([1, 2], batch_size=0), V,
     r"batch_size should be a positive integer value, but got batch_size=0", True),
    ("dataset-sizes", lambda T: T.utils.data.TensorDataset(ones(T, 3, 2), ones(T, 4)), A,
     r"Size mismatch between tensors \(first dims \[3, 4\]\)", True),
    ("random-split", lambda T: T.utils.data.random_split(range(10), [3, 3]), V,
     r"Sum of input lengths does not equal the length of the input dataset! \(lengths \[3, 3\] sum to 6, the dataset "
     r"has 10 samples\)", True),
    ("dataset-index", lambda T: T.utils.data.TensorDataset(ones(T, 3, 2))[3], I,
     r"index 3 is out of bounds for dimension 0 with size 3", True, "index"),
    ("collate-ragged", _collate_unequal, E, r"stack expects each tensor to be equal size, but got \[2\] at entry 0 and "
                                            r"\[3\] at entry 1", True),
    ("loader-drop-last-none", lambda T: T.utils.data.DataLoader([1, 2], batch_size=None, drop_last=True), V,
     r"batch_size=None option disables auto-batching and is mutually exclusive with drop_last", True),
]


@pytest.mark.parametrize(PARAMS, rows(CASES))
def test_misuse(call, exc, pattern, torch_too, kind):
    check_misuse(call, exc, pattern, torch_too, kind)


# ------------------------------------------------------------------------------ optimizer edge cases that do not raise

def test_duplicate_parameters_in_one_group_warn_as_in_pytorch():
    for T in (torch, tgrad):
        p = leaf(T, 2)
        with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters"):
            T.optim.SGD([p, p], lr=0.1)


def test_parameters_that_do_not_require_grad_are_left_alone():
    """Frozen parameters are a normal thing to hand an optimizer (``model.parameters()`` after
    freezing a layer): PyTorch accepts them and never updates them, and so does tgrad."""
    frozen, live = tgrad.ones(3), leaf(tgrad, 3)
    opt = tgrad.optim.SGD([frozen, live], lr=0.5)
    (live * 2).sum().backward()
    opt.step()
    assert frozen.tolist() == [1.0, 1.0, 1.0] and live.tolist() == [0.0, 0.0, 0.0]


def test_float_ops_promote_bool_and_integer_inputs_as_pytorch():
    """Not misuse, but once a kernel error: bool operands reached float formulas unconverted."""
    for op in ("exp", "sigmoid", "sqrt", "sin", "log", "tanh"):
        for make in (lambda T: T.tensor([True, False]), lambda T: T.tensor([2, 0])):
            got, want = getattr(make(tgrad), op)(), getattr(make(torch), op)()
            assert got.dtype is tgrad.float32
            torch.testing.assert_close(got.torch(), want)
    assert tgrad.arange(-2, 3).floor().tolist() == [-2, -1, 0, 1, 2]
