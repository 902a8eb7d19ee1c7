"""Graph capture and threads: a capture is its thread's, as a CUDA capture is its stream's. Another
thread's eager work during a capture is neither recorded nor disturbed (nor are its random draws),
two threads capture two graphs at once, a capture ends only on the thread that began it, and a
capture that fails in a thread leaves nothing behind. Real threads, synchronised by Events and
Barriers, each bounded by a timeout."""
import threading

import pytest
from torch.utils import _python_dispatch

import tgrad
from tgrad.kernels.runtime.capture import is_capturing


def _in_threads(*fns, timeout=120):
    """Run each ``fn`` in its own thread; re-raise the first error; fail on a thread still running."""
    errors = []

    def run(fn):
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors.append(e)
    threads = [threading.Thread(target=run, args=(fn,), daemon=True) for fn in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread did not finish"
    if errors:
        raise errors[0]


def _nothing_left_behind():
    assert not is_capturing()
    assert tgrad.ops.random.default_generator.graph_draws is None
    assert not _python_dispatch._is_in_torch_dispatch_mode and not _python_dispatch._get_current_dispatch_mode()
    tgrad.rand(2)  # random draws work


class TestThreads:
    """A capture is its thread's, as a CUDA capture is its stream's."""

    def test_another_threads_eager_work_is_neither_recorded_nor_disturbed(self):
        started, worked = threading.Event(), threading.Event()
        seen = {}

        def worker():
            assert started.wait(60)
            b = tgrad.ones(2)
            b.mul_(3.0)  # recorded by the other thread's capture, each replay would multiply again
            seen["b"], seen["capturing"] = b, is_capturing()
            seen["rand"] = tgrad.rand(4)  # an eager draw: neither refused nor taken from the graph
            worked.set()

        x = tgrad.ones(3)
        g = tgrad.graphs.Graph("cpu")
        offset = tgrad.ops.random.default_generator.offset
        with tgrad.graphs.graph(g):
            y = x * 2.0
            started.set()
            _in_threads(worker)
            assert worked.is_set()
            z = y + 1.0
        assert seen["capturing"] is False and seen["b"].tolist() == [3.0, 3.0]
        assert tgrad.ops.random.default_generator.offset > offset  # the worker's draw advanced the generator
        assert 0.0 < min(seen["rand"].tolist()) and max(seen["rand"].tolist()) < 1.0
        assert set(g.launches) == {k for k in g.launches if "rand" not in k and "uniform" not in k}
        assert sum(g.launches.values()) == 2  # the two kernels of this thread's block only
        x.copy_(tgrad.full((3,), 5.0))
        g.replay()
        g.replay()
        assert z.tolist() == [11.0] * 3 and seen["b"].tolist() == [3.0, 3.0]
        _nothing_left_behind()

    def test_two_threads_capture_two_graphs_at_once(self):
        barrier = threading.Barrier(2, timeout=60)
        results = {}

        def capture(k):
            def run():
                x = tgrad.ones(4)
                g = tgrad.graphs.Graph("cpu")
                barrier.wait()
                with tgrad.graphs.graph(g):
                    barrier.wait()  # both threads are capturing now
                    y = x * float(k)
                    noise = tgrad.rand(4)  # each graph draws from its own capture
                    barrier.wait()
                    out = y + float(k)
                assert not is_capturing()
                draws = []
                for value in (2.0, 3.0):
                    x.copy_(tgrad.full((4,), value))
                    g.replay()
                    draws.append(noise.tolist())
                    results[k, value] = out.tolist()
                assert draws[0] != draws[1]  # each replay draws fresh numbers
                results[k] = sum(g.launches.values())
            return run

        _in_threads(capture(3), capture(7))
        for k in (3, 7):
            for value in (2.0, 3.0):
                assert results[k, value] == [value * k + k] * 4
            assert results[k] == results[3]  # each graph holds its own block only
        _nothing_left_behind()

    def test_a_failed_capture_in_a_thread_leaves_nothing_behind(self):
        g = tgrad.graphs.Graph("cpu")

        def failing():
            x = tgrad.ones(2)
            with pytest.raises(ValueError, match="inside the block"):
                with tgrad.graphs.graph(g):
                    tgrad.rand(2)
                    x * 2.0
                    raise ValueError("inside the block")
            _nothing_left_behind()

        _in_threads(failing)
        assert not g.captured
        _nothing_left_behind()
        x = tgrad.ones(2)
        with tgrad.graphs.graph(g):  # the graph captures again, in another thread
            y = x * 4.0
        g.replay()
        assert y.tolist() == [4.0, 4.0]

    def test_a_capture_ends_only_on_its_own_thread(self):
        g = tgrad.graphs.Graph("cpu")
        x = tgrad.ones(2)
        g.capture_begin()
        try:
            y = x * 2.0

            def end_elsewhere():
                with pytest.raises(RuntimeError, match="must end on the thread that began it"):
                    g.capture_end()
                assert not is_capturing()
            _in_threads(end_elsewhere)
            assert is_capturing()
        finally:
            g.capture_end()
        g.replay()
        assert y.tolist() == [2.0, 2.0]
        _nothing_left_behind()
