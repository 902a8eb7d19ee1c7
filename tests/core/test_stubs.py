"""The generated type stubs (``python -m tgrad.stubs``): current with the code, naming the installed ops
with their real signatures, agreeing with PyTorch's own stubs on which ops return one Tensor, and enough
for mypy to type-check PyTorch-style programs written against tgrad, as a wheel installs them."""
import ast
import fnmatch
import functools
import importlib.util
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import tgrad
import tgrad.nn.functional as F
from tgrad import stubs
from tgrad.ops import registry

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    try:
        import tomli as tomllib
    except ModuleNotFoundError:
        tomllib = None

ROOT = Path(__file__).resolve().parents[2]
SEEDS = Path("/work/shared/seeds")


@functools.cache
def _expected():
    return stubs.stubs()  # a few seconds (it asks a fresh interpreter what ``import tgrad`` binds)


def _stub(module):
    return ast.parse(_expected()[Path(module.__file__).with_suffix(".pyi")])


def _defs(body):
    return {node.name: node for node in body if isinstance(node, ast.FunctionDef)}


def _tensor_class():
    return next(node for node in _stub(sys.modules[tgrad.Tensor.__module__]).body
                if isinstance(node, ast.ClassDef) and node.name == "Tensor")


def _parameter_names(node):
    a = node.args
    return ([p.arg for p in a.posonlyargs + a.args] + ([f"*{a.vararg.arg}"] if a.vararg else [])
            + [p.arg for p in a.kwonlyargs] + ([f"**{a.kwarg.arg}"] if a.kwarg else []))


def _runtime_names(fn):
    out = []
    for p in stubs._signature(fn).parameters.values():
        out.append({p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name)
    return out


def test_the_stubs_in_the_tree_are_current():
    assert stubs.stale(_expected()) == [], "the stubs are stale: run python -m tgrad.stubs"


def test_check_mode_names_a_stale_stub_and_fails(monkeypatch, capsys):
    expected = _expected()
    path = next(iter(expected))
    monkeypatch.setattr(stubs, "stubs", lambda: {**expected, path: expected[path] + "x: int\n"})
    assert stubs.main(["--check"]) == 1
    assert str(path) in capsys.readouterr().err
    monkeypatch.setattr(stubs, "stubs", lambda: expected)
    assert stubs.main(["--check"]) == 0


def test_the_output_is_deterministic():
    assert stubs.stubs() == _expected()


def test_every_registered_name_is_in_its_stub():
    module = _stub(tgrad)
    bound = {a.asname or a.name for node in module.body if isinstance(node, ast.ImportFrom) for a in node.names}
    bound |= {t.id for node in module.body if isinstance(node, (ast.AnnAssign, ast.Assign))
              for t in ([node.target] if isinstance(node, ast.AnnAssign) else node.targets)}
    assert set(registry.FUNCTIONS) <= set(_defs(module.body)) | bound
    assert {"Tensor", "nn", "optim", "autograd", "no_grad", "float32", "Size", "device"} <= bound
    members = set(_defs(_tensor_class().body)) | {
        node.target.id for node in _tensor_class().body if isinstance(node, ast.AnnAssign)}
    assert {n for n in registry.METHODS if not n.startswith("_") or n.endswith("__")} <= members
    assert {"backward", "grad", "shape", "requires_grad_", "__add__", "__getitem__"} <= members
    assert set(F.__all__) | set(registry.NN_FUNCTIONAL) <= set(_defs(_stub(F).body))


@pytest.mark.parametrize("where, name, obj", [
    ("Tensor", "exp", tgrad.Tensor.exp), ("tgrad", "sum", tgrad.sum), ("F", "relu", F.relu),
    ("Tensor", "sum", tgrad.Tensor.sum), ("tgrad", "zeros", tgrad.zeros), ("F", "cross_entropy", F.cross_entropy)])
def test_an_op_has_its_signature_and_returns_tensor(where, name, obj):
    body = {"Tensor": _tensor_class().body, "tgrad": _stub(tgrad).body, "F": _stub(F).body}[where]
    node = _defs(body)[name]
    assert _parameter_names(node) == _runtime_names(obj)
    assert ast.unparse(node.returns) == "Tensor"


def test_wrapped_ops_keep_the_out_and_keepdims_their_wrappers_add():
    names = _parameter_names(_defs(_stub(tgrad).body)["sum"])
    assert "out" in names and "keepdims" in names and "keepdim" in names
    assert "out" not in _parameter_names(_defs(_tensor_class().body)["sum"])


def test_an_unreadable_signature_is_written_star_args_and_counted():
    def positional(a, /, b, *, c=1):
        pass

    fake = types.ModuleType("fake_ops")
    fake.opaque, fake.positional = max, positional  # max: a builtin with no signature to read
    text = stubs.module_stub(fake, ["opaque", "positional"], {"opaque", "positional"})
    assert "# 1 signature(s) could not be read" in text and "def opaque(*args, **kwargs) -> Tensor: ..." in text
    assert "def positional(a, /, b, *, c=...) -> Tensor: ..." in text
    ast.parse(text)


def test_non_tensor_results_are_not_claimed_to_be_tensors():
    defs = _defs(_stub(tgrad).body)
    assert ast.unparse(defs["max"].returns) == "Any"  # a tensor, or (values, indices) with dim=
    assert ast.unparse(defs["allclose"].returns) == "_builtins.bool"
    assert ast.unparse(_defs(_tensor_class().body)["item"].returns) == "Any"


_TORCH_SOURCES = ("_C/_VariableFunctions.pyi", "_C/__init__.pyi", "_tensor.py", "functional.py")
_FUNCTIONAL_SOURCES = ("nn/functional.pyi", "nn/functional.py")


def _torch_returns(sources=_TORCH_SOURCES + _FUNCTIONAL_SOURCES):
    """Return annotations of PyTorch's own stubs and typed sources (``sources``), by function or
    method name."""
    spec = importlib.util.find_spec("torch")
    base = Path(spec.origin).parent
    returns = {}
    for rel in sources:
        if not (base / rel).exists():
            continue
        tree = ast.parse((base / rel).read_text())
        bodies = [tree.body] + [n.body for n in tree.body if isinstance(n, ast.ClassDef)
                                and n.name in ("TensorBase", "Tensor")]
        for body in bodies:
            for node in body:
                if isinstance(node, ast.FunctionDef) and node.returns is not None:
                    returns.setdefault(node.name, set()).add(ast.unparse(node.returns).strip("'\""))
    return returns


def test_tensor_returns_agree_with_pytorchs_stubs():
    torch_returns = _torch_returns()
    if not torch_returns:
        pytest.skip("PyTorch's stubs are not where this test reads them (torch/_C/_VariableFunctions.pyi)")
    # F's names against torch.nn.functional's (F.embedding_bag is a Tensor, torch.embedding_bag a tuple)
    functional_returns = _torch_returns(_FUNCTIONAL_SOURCES)
    claimed = [(node.name, node, torch_returns) for node in _stub(tgrad).body + _tensor_class().body
               if isinstance(node, ast.FunctionDef) and ast.unparse(node.returns) == "Tensor"]
    claimed += [(node.name, node, functional_returns) for node in _stub(F).body
                if isinstance(node, ast.FunctionDef) and ast.unparse(node.returns) == "Tensor"]
    # PyTorch's ``t == obj`` with a non-tensor ``obj`` is False: tgrad compares tensors and numbers
    for name in ("__eq__", "__ne__"):
        torch_returns.get(name, set()).discard("_bool")
    wrong = sorted({name for name, _, ref in claimed if name in ref and ref[name] - {"Tensor", "Self"}})
    assert wrong == [], wrong
    assert len([n for n, _, ref in claimed if n in ref]) > 300  # the comparison covers the ops


def _wheel_layout(dest: Path) -> Path:
    """The package as a wheel installs it (pyproject's packages, package-dir and package-data), copied
    under ``dest``: the stubs reach a type checker only if the wheel ships them."""
    if tomllib is None:
        pytest.skip("reading pyproject.toml needs tomllib (Python 3.11+) or tomli")
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    package_dir, package_data = tool.get("package-dir", {}), tool.get("package-data", {})
    for package in tool["packages"]:
        root = max((p for p in package_dir if package == p or package.startswith(p + ".")), key=len)
        source = ROOT / package_dir[root] / Path(*package[len(root):].split(".")[1:])
        target = dest / Path(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        patterns = ["*.py"] + package_data.get(package, []) + package_data.get("*", [])
        for f in source.iterdir():
            if f.is_file() and any(fnmatch.fnmatch(f.name, p) for p in patterns):
                shutil.copy(f, target / f.name)
    return dest


def _mypy(tmp_path, code: str, follow: bool = False, *more: str):
    """mypy over ``code`` (as program.py, with ``more`` as program1.py, ...) with tgrad as a wheel installs
    it. By default imports are not followed into ``.py`` files (tgrad's own code, torch): the stubs,
    checked too, and the programs are what is read. ``follow``: as for an installed package, tgrad's
    code and torch are read too (a minute), and only the programs' errors are reported."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install mypy, or the test extra)")
    site = _wheel_layout(tmp_path / "site")
    programs = []
    for i, text in enumerate((code, *more)):
        programs.append(tmp_path / f"program{i or ''}.py")
        programs[-1].write_text(text)
    checked = [] if follow else sorted(str(p) for p in site.rglob("*.pyi"))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", f"--follow-imports={'silent' if follow else 'skip'}", "--no-error-summary",
         "--show-error-codes", "--cache-dir", str(tmp_path / "cache"), *map(str, programs), *checked],
        capture_output=True, text=True, cwd=tmp_path, env={"MYPYPATH": str(site), "PATH": "/usr/bin:/bin"})
    return result.stdout + result.stderr


SNIPPET = """\
import tgrad
import tgrad.nn.functional as F

tgrad.randn(3).exp().sum().backward()
reveal_type(tgrad.randn(3).exp().sum())
reveal_type(F.relu(tgrad.zeros(2, 3)) @ tgrad.ones(3))
reveal_type(tgrad.max(tgrad.ones(2)))
x: tgrad.Tensor = tgrad.ones(2, requires_grad=True)
x.no_such_method()
"""


def test_mypy_checks_a_program_against_the_stubs(tmp_path):
    out = _mypy(tmp_path, SNIPPET)
    lines = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("program.py:")]
    assert lines == ['note: Revealed type is "tgrad.tensor.Tensor"', 'note: Revealed type is "tgrad.tensor.Tensor"',
                     'note: Revealed type is "Any"',
                     'error: "Tensor" has no attribute "no_such_method"  [attr-defined]'], out
    assert "program.py" in out and out.count("error:") == 1, out  # and none in the stubs


# The seed tutorials are read where they are, not copied into the repository (003 is CC BY-NC-SA 4.0, 000
# states no licence): their code is taken from the text, where the page lost line breaks and indentation.
# A new statement starts without a line break after ")" or a digit, before "print(", after "import torch",
# and after the colon of a loop header (whose one-statement body is indented again).
GLUE = re.compile(r"(?<=[)\d])\s*(?=print\(|while |[a-z]\w*(?: ?= ?[^=\s]|\.\w+\())|(?<=\w)(?=print\()"
                  r"|(?<=torch)(?=from )|(?<=:)\s{2,}(?=\S)")


def _is_code(piece: str) -> bool:
    try:
        node = ast.parse(piece + ("\n    pass" if piece.endswith(":") else "")).body[0]
    except SyntaxError:
        return False
    if isinstance(node, ast.Expr):  # printed output parses too (``tensor([...])``, ``True``): keep calls made
        return isinstance(node.value, ast.Call) and (isinstance(node.value.func, ast.Attribute)
                                                     or getattr(node.value.func, "id", "") == "print")
    return isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AugAssign, ast.While, ast.With, ast.For))


def seed_program(text: str) -> str:
    """A tutorial's code, run as its README says: ``import tgrad as torch`` (003's ``torch.rands`` is randn)."""
    lines, indent = [], False
    for line in text.splitlines():
        if not line.isascii():  # the prose is Chinese
            continue
        for piece in filter(None, (p.strip() for p in GLUE.split(line))):
            if _is_code(piece):
                lines.append(("    " if indent else "") + piece)
                indent = piece.endswith(":")
    return ("\n".join(lines) + "\n").replace("import torch\n", "import tgrad as torch\n").replace(
        "from torch.autograd import", "from tgrad.autograd import").replace("torch.rands(", "torch.randn(")


@pytest.mark.parametrize("seed, statements", [("000_6ed475c5ebd97515.txt", 38), ("003_9a10ce3b8fe6da1f.txt", 30)])
def test_mypy_finds_no_error_in_a_seed_tutorial(tmp_path, seed, statements):
    if not (SEEDS / seed).exists():
        pytest.skip(f"{SEEDS / seed} is absent: the seed tutorials are read there, not copied (their licences)")
    program = seed_program((SEEDS / seed).read_text())
    assert len(program.splitlines()) == statements and program.startswith("import tgrad as torch\n"), program
    out = _mypy(tmp_path, program)
    assert "error" not in out, program + out


TOUR = ROOT / "train_examples" / "autograd_tour.py"  # the repository's own run of both seed tutorials


def test_mypy_finds_no_error_in_the_autograd_tour(tmp_path):
    out = _mypy(tmp_path, TOUR.read_text())
    assert "error" not in out, out


def test_mypy_reading_tgrad_as_installed_finds_no_error_in_the_tutorials(tmp_path):
    # ``Variable(t)`` is a Tensor to a type checker that reads tgrad's code (Variable.__new__ says so)
    seeds = [seed_program(p.read_text()) for p in sorted(SEEDS.glob("0*.txt"))]
    out = _mypy(tmp_path, TOUR.read_text(), True, *seeds, "import tgrad\ntgrad.randn(3).exp().sum().backward()\n"
                "from tgrad.autograd import Variable\nreveal_type(Variable(tgrad.ones(2)) + 1)\n")
    assert out.splitlines() == [f'program{len(seeds) + 1}.py:4: note: Revealed type is "tgrad.tensor.Tensor"'], out
