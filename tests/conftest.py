"""Shared fixtures: the devices every op test runs on (CPU always, CUDA when present)."""
import pytest
import torch

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def pytest_addoption(parser):
    parser.addoption("--replay-verify", action="store_true",
                     help="run every CPU launch in the CPU executor's verify mode: each replay is also interpreted "
                          "from the same memory snapshot and the bytes compared (kernels/replay.py); CI runs this")


def pytest_configure(config):
    if config.getoption("--replay-verify", default=False):
        import tgrad.kernels
        tgrad.kernels.set_replay(True, verify=True)
