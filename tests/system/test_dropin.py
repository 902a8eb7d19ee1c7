"""The drop-in runner (``python -m tgrad``): unmodified PyTorch programs against real PyTorch.

Each program in tests/system/dropin_corpus/ runs twice, under real PyTorch and through the runner (all
programs of one kind in one process, see _driver.py). Printed lines must match exactly, except
lines ``~ NAME VALUE atol=A`` (training outcomes), whose values must agree within ``A``.
A program whose ``# needs:`` line names torch APIs that tgrad lacks is skipped, naming them; one with
an ``# xfail:`` line (a known divergence being fixed) is expected to differ, and fails once it agrees.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "dropin_corpus"
PROGRAMS = sorted(p.name for p in CORPUS.glob("*.py") if not p.name.startswith("_"))
TIMEOUT = 600


def needs(name):
    """The ``torch.X`` names a program declares on its ``# needs:`` line."""
    for line in (CORPUS / name).read_text().splitlines():
        if line.startswith("# needs:"):
            return [n.strip() for n in line[len("# needs:"):].split(",") if n.strip()]
    return []


def missing_in_tgrad(torch_names):
    """The declared names tgrad's drop-in view of torch does not provide."""
    code = ("import sys, tgrad.dropin as d\n"
            "d.install()\n"
            "missing = []\n"
            "for n in sys.argv[1:]:\n"
            "    mod, _, attr = n.rpartition('.')\n"
            "    try:\n"
            "        m = d._resolve(mod)\n"
            "        getattr(m, attr)\n"
            "    except (ImportError, AttributeError):\n"
            "        missing.append(n)\n"
            "print(','.join(missing))\n")
    out = subprocess.run([sys.executable, "-c", code, *torch_names], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return [n for n in out.stdout.strip().split(",") if n]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{program: (torch result, tgrad result, missing APIs)} for the whole corpus."""
    every = sorted({n for p in PROGRAMS for n in needs(p)})
    missing = set(missing_in_tgrad(every)) if every else set()
    runnable = [p for p in PROGRAMS if not set(needs(p)) & missing]
    tmp = tmp_path_factory.mktemp("dropin")
    results = {}
    for kind, prefix in (("torch", []), ("tgrad", ["-m", "tgrad"])):
        out = tmp / f"{kind}.json"
        cmd = [sys.executable, *prefix, str(CORPUS / "_driver.py"), str(out), *[str(CORPUS / p) for p in runnable]]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, timeout=TIMEOUT)
        assert proc.returncode == 0, proc.stderr[-4000:]
        results[kind] = json.loads(out.read_text())
    return {p: (results["torch"].get(p), results["tgrad"].get(p), sorted(set(needs(p)) & missing))
            for p in PROGRAMS}


_APPROX = re.compile(r"^~ (\S+) (\S+) atol=(\S+)$")


def compare(torch_out, tgrad_out):
    a, b = torch_out.splitlines(), tgrad_out.splitlines()
    assert len(a) == len(b), f"{len(a)} lines under torch, {len(b)} under tgrad:\n" + "\n".join(b[-20:])
    for i, (x, y) in enumerate(zip(a, b)):
        mx, my = _APPROX.match(x), _APPROX.match(y)
        if mx and my and mx.group(1) == my.group(1):
            vx, vy, tol = float(mx.group(2)), float(my.group(2)), float(mx.group(3))
            assert abs(vx - vy) <= tol, \
                f"line {i + 1}: {mx.group(1)} is {vx} under torch, {vy} under tgrad (atol {tol})"
        else:
            assert x == y, f"line {i + 1} differs:\n  torch: {x}\n  tgrad: {y}"


def known_divergence(name):
    """A program's ``# xfail:`` line: a divergence from PyTorch someone is fixing now."""
    for line in (CORPUS / name).read_text().splitlines():
        if line.startswith("# xfail:"):
            return line[len("# xfail:"):].strip()
    return None


def check_program(ref, got):
    assert ref["error"] is None, f"the program fails under real PyTorch:\n{ref['error']}"
    assert got["error"] is None, f"the program fails under tgrad:\n{got['error']}\nprinted:\n{got['stdout'][-2000:]}"
    assert ref["stdout"].strip(), "the program printed nothing to compare"
    compare(ref["stdout"], got["stdout"])


@pytest.mark.parametrize("program", PROGRAMS)
def test_program(runs, program):
    ref, got, missing = runs[program]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}, which tgrad does not have yet")
    pending = known_divergence(program)
    if pending is None:
        check_program(ref, got)
        return
    try:
        check_program(ref, got)
    except AssertionError as e:
        pytest.xfail(f"{pending}: {str(e).splitlines()[0]}")
    pytest.fail(f"{program} now agrees with PyTorch: remove its '# xfail:' line")


# ------------------------------------------------------------------ the runner itself

def tgrad_run(*args, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "tgrad", *args], capture_output=True, text=True, cwd=cwd or ROOT,
                          timeout=120, env=env)


def test_script_args_and_scoping(tmp_path):
    # a user module beside the script gets tgrad too; tgrad, numpy and torch's own code keep torch
    (tmp_path / "helper.py").write_text("import torch\nKIND = type(torch.zeros(1)).__module__\n")
    (tmp_path / "main.py").write_text(
        "import sys, torch, numpy, tgrad, tgrad.autograd.engine as eng\n"
        "import helper\n"
        "print(sys.argv[1:], __name__, helper.KIND)\n"
        "print(torch.Tensor is tgrad.Tensor, torch.nn.Linear is tgrad.nn.Linear)\n"
        "real = sys.modules['torch']\n"
        "print(real.__name__, real is not torch, type(real.zeros(1)).__module__)\n"
        "x = torch.randn(3, requires_grad=True)\n"
        "(x * x).sum().backward()\n"  # the engine's lazy `import torch` must get the real one
        "print(bool(((x.grad - 2 * x).abs() < 1e-6).all()))\n")
    r = tgrad_run(str(tmp_path / "main.py"), "a", "--b")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["['a', '--b'] __main__ torch", "True True", "torch True torch", "True"]


def test_module_code_and_program_modes(tmp_path):
    (tmp_path / "pkgmod.py").write_text("import sys, torch\nprint(torch.ones(2).shape, sys.argv[1:])\n")
    r = tgrad_run("-m", "pkgmod", "x", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "torch.Size([2]) ['x']\n"
    r = tgrad_run("-c", "import torch, sys; print(torch.float64, torch.Tensor.__name__, sys.argv[1:])", "y")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "torch.float64 Tensor ['y']\n"
    # `--`: a program found on PATH (here pytest's console script) whose user files get tgrad
    (tmp_path / "test_user.py").write_text("import torch, tgrad\n\n"
                                           "def test_it():\n    assert torch.Tensor is tgrad.Tensor\n")
    r = tgrad_run("--", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_user.py"), cwd=tmp_path,
                  env={**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout


def test_missing_names_fail_clearly(tmp_path):
    cases = {
        "import torch.fft": ("ModuleNotFoundError", "torch.fft: tgrad has no equivalent of torch.fft"),
        "from torch.nn import NoSuchLayer": ("ImportError", "tgrad has no equivalent of torch.nn.NoSuchLayer"),
        "import torch\ntorch.fft": ("AttributeError", "tgrad has no equivalent of torch.fft"),
        # tgrad has a module named ops, but it is not torch.ops: never a wrong module
        "import torch\ntorch.ops": ("AttributeError", "tgrad has no equivalent of torch.ops"),
        "import torch.nn.functional as F\nF.math": ("AttributeError", "torch.nn.functional.math"),
        "import importlib\nimportlib.import_module('torch.jit')": ("ModuleNotFoundError", "torch.jit"),
    }
    script = tmp_path / "cases.py"
    script.write_text("import sys\nfor code in sys.argv[1:]:\n    try:\n        exec(code, {'__name__': '__main__'})\n"
                      "        print('no error')\n    except Exception as e:\n"
                      "        print(f'{type(e).__name__}: {e}')\n"
                      "import torch\nprint(hasattr(torch, 'fft'), hasattr(torch, 'nn'))\n")
    r = tgrad_run(str(script), *cases)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for (code, (kind, text)), line in zip(cases.items(), lines):
        assert line.startswith(kind + ":") and text in line, (code, line)
    assert lines[-1] == "False True"
    r = tgrad_run("-c", "import torch.fft")  # an uncaught one ends the program as in Python
    assert r.returncode == 1 and "ModuleNotFoundError: torch.fft: tgrad has no equivalent" in r.stderr
    r = tgrad_run("-c", "import torch.linalg as L, torch; print(L.norm(torch.ones(4)).item(), L is torch.linalg)")
    assert r.returncode == 0 and r.stdout.split() == ["2.0", "True"], r.stdout + r.stderr
    r = tgrad_run(str(tmp_path / "absent.py"))
    assert r.returncode == 2 and "No such file" in r.stderr
    r = tgrad_run()
    assert r.returncode == 2 and "python -m tgrad SCRIPT" in r.stdout


def test_install_uninstall_in_process():
    code = ("import tgrad, tgrad.dropin as d\n"
            "ns = {'__name__': '__main__'}\n"
            "d.install(); d.install()\n"
            "exec('import torch; import torch.nn as nn; from torch.utils.data import DataLoader', ns)\n"
            "print(ns['torch'].Tensor is tgrad.Tensor, ns['DataLoader'] is tgrad.utils.data.DataLoader,\n"
            "      repr(tgrad.float32))\n"
            "print(type(tgrad.zeros(1)), type(tgrad.nn.Parameter(tgrad.zeros(1))), type(tgrad.Size([1])),\n"
            "      type(tgrad.int8))\n"
            "import sys, numpy, tgrad.nn.functional as F\n"
            "ts = sys.modules['torch._tensor_str']  # torch's own printing code\n"
            "print(d._is_user(ns), d._is_user(vars(numpy)), d._is_user(vars(F)), d._is_user(vars(ts)))\n"
            "d.uninstall()\n"
            "exec('import torch', ns)\n"
            "print(ns['torch'].Tensor is tgrad.Tensor, repr(tgrad.float32), tgrad.zeros(2).shape,\n"
            "      type(tgrad.zeros(1)))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "True True torch.float32",
        "<class 'torch.Tensor'> <class 'torch.nn.parameter.Parameter'> <class 'torch.Size'> <class 'torch.dtype'>",
        "True False False False",
        "False tgrad.float32 tgrad.Size([2]) <class 'tgrad.tensor.Tensor'>"]
