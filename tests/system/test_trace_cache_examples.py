"""Training examples run twice, each run a new process sharing one trace cache directory
(kernels/runtime/trace_cache.py): the second run finds on disk every trace the first recorded, and
records (instead of interpreting) what the first saw once, so it interprets no launch at all (an
index kernel's tuple of index tensors included: kernels/runtime/signature.py keys tuples)."""
import json
import os
import re
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "train_examples")

DRIVER = """
import json, runpy, sys
sys.path.insert(0, {examples!r})
sys.argv = [{script!r}] + {argv!r}
runpy.run_path({script!r}, run_name="__main__")
import tgrad.kernels as K
print("COUNTS " + json.dumps({{"counts": dict(K.replay_counts), "reasons": dict(K.fallback_reasons),
                               "cache": dict(K.trace_cache_counts)}}))
"""


def _run(name, argv, cache, out):
    script = os.path.join(EXAMPLES, name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TGRAD_")}
    env.update(TGRAD_CACHE_DIR=str(cache))
    code = DRIVER.format(examples=EXAMPLES, script=script, argv=[*argv, "--no-progress", "--out", str(out)])
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    first_step = re.search(r"the first step (\d+) ms", done.stdout)
    assert first_step is not None, done.stdout[-2000:]
    report = json.loads(done.stdout.split("COUNTS ", 1)[1])
    return report, int(first_step.group(1))


@pytest.mark.parametrize("name, argv", [("moons.py", []), ("digits.py", ["--quick", "--steps", "3"]),
                                        ("gpt.py", ["--quick", "--steps", "2"])])
def test_the_second_run_interprets_no_launch(tmp_path, name, argv):
    cold, cold_ms = _run(name, argv, tmp_path / "cache", tmp_path)
    assert cold["counts"].get("interpreted", 0) > 0 and cold["cache"].get("stored", 0) > 0
    warm, warm_ms = _run(name, argv, tmp_path / "cache", tmp_path)
    assert warm["reasons"] == {}, warm["reasons"]
    assert warm["counts"].get("interpreted", 0) == 0
    assert warm["cache"].get("loaded", 0) > 0 and not [k for k in warm["cache"] if k.startswith("rejected")]
    print(f"{name}: first step {cold_ms} ms from a cold cache, {warm_ms} ms from a warm one")
