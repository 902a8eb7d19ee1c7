"""Shared fixtures: the devices every op test runs on (CPU always, CUDA when present), and the
options that configure and compile launches as a GPU would (--as-cuda, --compile-for)."""
import json
import os
import shutil
import tempfile
from contextlib import nullcontext

import pytest

import tgrad.kernels
from support.kernel_guard import memory_checked
from support.reference import DEVICES
from tgrad.kernels.runtime.cuda_compile import CompileObserver, compile_report
from tgrad.kernels.runtime.launch import launch_observers
from tgrad.kernels.runtime.target import as_cuda


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param


@pytest.fixture
def empty_trace_cache(tmp_path):
    """The CPU trace cache (kernels/runtime/trace_cache.py) in an empty directory of this test's,
    when it is on: nothing an earlier test recorded is found on disk."""
    cache_dir = tgrad.kernels.trace_cache_dir()
    if cache_dir is not None:
        tgrad.kernels.set_trace_cache(directory=str(tmp_path / "trace-cache"))
    yield
    if cache_dir is not None:
        tgrad.kernels.set_trace_cache(directory=cache_dir)


@pytest.fixture
def replay_verify_mode(empty_trace_cache):
    """The CPU executor on, in verify mode (each replay also interpreted and the bytes compared),
    with an empty cache in memory and on disk: a test's launches interpret, then record, then replay."""
    enabled, verify = tgrad.kernels.replay_enabled(), tgrad.kernels.replay_verify()
    tgrad.kernels.set_replay(True, verify=True)
    tgrad.kernels.clear_replay_cache()
    yield
    tgrad.kernels.set_replay(enabled, verify=verify)


def pytest_addoption(parser):
    parser.addoption("--replay-verify", action="store_true",
                     help="run every CPU launch in the CPU executor's verify mode: each replay is also interpreted "
                          "from the same memory snapshot and the bytes compared (kernels/replay.py); CI runs this")
    parser.addoption("--trace-cache", default=None, metavar="DIR",
                     help="keep the CPU trace cache (kernels/runtime/trace_cache.py) in DIR across runs (a warm "
                          "suite); by default each run starts from an empty temporary one, never the user's")
    parser.addoption("--as-cuda", action="store_true",
                     help="configure every CPU launch as a GPU run would (kernels/target.py) and interpret that")
    parser.addoption("--memory-check", action="store_true",
                     help="check every interpreted load, store and atomic of every test against the tensors its "
                          "launch was given (tests/support/kernel_guard.py); launches interpret instead of replaying")
    parser.addoption("--compile-for", default=None, metavar="ARCHS",
                     help="compile each distinct launch for these CUDA archs (e.g. 90,80) as a GPU launch would "
                          "(kernels/cuda_compile.py); a test whose launch fails to compile fails")
    parser.addoption("--compile-coverage", action="store_true",
                     help="with --compile-for: one launch per kernel, dtypes and path, not every specialisation")
    parser.addoption("--compile-report", default=None, metavar="PATH",
                     help="with --compile-for: registers, spills and shared memory per kernel and arch as JSON")


@pytest.fixture(autouse=True)
def _launch_target(request):
    """--as-cuda: the test's launches configured for a GPU; --compile-for: each compiled for it;
    --memory-check: each access of each interpreted launch checked (a violation fails the test)."""
    observer = getattr(request.config, "_compile_observer", None)
    before = len(observer.failures) if observer else 0
    with (as_cuda() if request.config.getoption("--as-cuda", default=False) else nullcontext(),
          memory_checked() if request.config.getoption("--memory-check", default=False)
          and not request.node.get_closest_marker("breaks_memory_rules") else nullcontext()):
        yield
    if observer and len(observer.failures) > before:
        pytest.fail("launches that do not compile for CUDA:\n" + "\n".join(
            f"{kernel} sm_{arch}: {message}" for _, kernel, arch, message in observer.failures[before:]))


def pytest_configure(config):
    config.addinivalue_line("markers", "cpu_launch_decisions: asserts the CPU's own launch decisions (one launch per "
                                       "site, interpreter block sizes, the CPU's split and scatter rules); skipped "
                                       "under --as-cuda, which replaces them with the GPU's")
    config.addinivalue_line("markers", "executor_replay: asserts the CPU executor's replays (counts, variants, "
                                       "fallbacks); skipped under --memory-check, where every launch interprets")
    config.addinivalue_line("markers", "launch_plans: asserts eager call or site plans, which a launch observer "
                                       "turns off (every launch must reach it); skipped under --compile-for")
    config.addinivalue_line("markers", "breaks_memory_rules: makes out-of-bounds accesses on purpose (to test the "
                                       "checker); run without --memory-check's checker")
    archs = config.getoption("--compile-for", default=None)
    if archs:
        config._compile_observer = CompileObserver(
            archs=tuple(int(a) for a in archs.split(",")), coverage=config.getoption("--compile-coverage"),
            usage=bool(config.getoption("--compile-report")), context=lambda: os.environ.get("PYTEST_CURRENT_TEST"))
        launch_observers.append(config._compile_observer)
    if config.getoption("--replay-verify", default=False):
        tgrad.kernels.set_replay(True, verify=True)
    cache_dir = config.getoption("--trace-cache", default=None)
    if cache_dir is None:
        cache_dir = config._trace_cache_tmp = tempfile.mkdtemp(prefix="tgrad-trace-cache-")
    os.environ["TGRAD_CACHE_DIR"] = cache_dir  # subprocesses of the tests too
    tgrad.kernels.set_trace_cache(directory=cache_dir)


def pytest_unconfigure(config):
    tmp = getattr(config, "_trace_cache_tmp", None)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    skips = {"cpu_launch_decisions": config.getoption("--as-cuda", default=False) and pytest.mark.skip(
                 reason="asserts the CPU's own launch decisions, which --as-cuda replaces"),
             "executor_replay": config.getoption("--memory-check", default=False) and pytest.mark.skip(
                 reason="asserts the executor's replays, which the memory checker turns off"),
             "launch_plans": config.getoption("--compile-for", default=None) and pytest.mark.skip(
                 reason="asserts eager plans, which --compile-for's observer turns off")}
    for item in items:
        for marker, skip in skips.items():
            if skip and marker in item.keywords:
                item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, config):
    observer = getattr(config, "_compile_observer", None)
    if observer is None:
        return
    report = compile_report(observer)
    terminalreporter.write_line(f"compiled for CUDA: {len(observer.compiled)} configurations of "
                                f"{len({r['kernel'] for r in observer.compiled.values()})} kernels, "
                                f"{len(observer.failures)} failures")
    for (kernel, arch), row in sorted(report.items()):
        terminalreporter.write_line(f"  {kernel} sm_{arch}: {row}")
    path = config.getoption("--compile-report")
    if path:
        with open(path, "w") as f:
            json.dump({f"{k} sm_{a}": row for (k, a), row in sorted(report.items())}, f, indent=1)
