"""The layer map of docs/architecture.md, checked: no module imports a layer above its own.

Every module under tinyattn/ is parsed (ast, nothing is imported) and each of its imports,
at the top of the file or inside a function (a "lazy" import is still a dependency), is
looked up in LAYERS. An import of a higher layer fails the test unless it is in ALLOWED_UPWARD,
where each exception says why it is the honest choice. Imports under ``if TYPE_CHECKING:``
are annotations only and are not counted. Only tinyattn/backend.py may import CuPy.

A module that belongs to no layer fails too: a new top-level module or folder must be placed
in the map (here and in docs/architecture.md) before it can be imported.
"""
from __future__ import annotations

import ast
import functools
import os
import re
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tinyattn")
ARCHITECTURE = os.path.join(os.path.dirname(ROOT), "docs", "architecture.md")

# The layers, lowest first; a module may import its own layer and the layers below it.
# Keys are the names under tinyattn/ (a folder or a module); "tinyattn" is the package itself.
LAYER_ORDER = ["backend", "tensor", "ops", "nn", "checking", "tools",
               "applications", "entry points"]
LAYERS: Dict[str, str] = {
    # backend: arrays, devices, random generators, files written atomically; no tinyattn
    "backend": "backend", "strict_device": "backend", "atomic": "backend",
    "console": "backend", "kernels": "backend", "blas_threads": "backend",
    "spaced_values": "backend",   # linspace/logspace values as torch rounds them (NumPy only)
    "broadcast_error": "backend",  # torch's error for shapes that do not broadcast
    # tensor and autograd
    "tensor": "tensor", "autograd": "tensor", "factories": "tensor", "precision": "tensor",
    "factories_extra": "tensor",   # torch.range, scalar_tensor, asarray, empty_strided
    "promotion": "tensor", "printing": "tensor", "generator": "tensor",
    "amp": "tensor",          # autocast: a dispatch mode of Function.apply, GradScaler
    # ops: one Function per op, and the torch.nn.functional names over them
    "ops": "ops", "functional": "ops", "special": "ops", "linalg": "ops", "fft": "ops",
    "distributions": "ops",   # torch.distributions.Categorical, composed of ops
    "signal": "ops",          # torch.signal.windows (hann, kaiser, ...), made from arrays
    # several processes: torch.distributed's collectives on MPI, torch.multiprocessing
    "distributed": "ops", "multiprocessing": "ops",
    # nn: modules, layers, attention, GPT; utils.data (Dataset, DataLoader)
    "nn": "nn", "utils": "nn",
    "func": "nn",             # torch.func.functional_call (nn/utils/stateless.py)
    # checking: gradcheck, the op table that drives it (its rows use nn's attention variants)
    "gradcheck": "checking", "optable": "checking", "testing": "checking",
    # tools above nn: file formats, optimisers, the profiler, quantization, pictures
    "io": "tools", "serialization": "tools",
    "optim": "tools", "viz": "tools",
    "profiler": "tools", "quantization": "tools", "ao": "tools",
    # applications: pretrained models, the training script, exercises, the torch shim
    "models": "applications", "train": "applications", "exercises": "applications",
    # entry points: the package's namespace, the command line, and the torch shim (which
    # presents the whole package as ``torch``)
    "tinyattn": "entry points", "cli": "entry points", "__main__": "entry points",
    "doctor": "entry points", "torch_shim": "entry points", "torch_top_level": "entry points",
}

# (importing module, imported module) -> why an import of a higher layer is right there.
# Each is a lazy import inside a function; none runs at import time.
ALLOWED_UPWARD: Dict[Tuple[str, str], str] = {
    ("tinyattn.tensor.conversion", "tinyattn.ops"):
        "Tensor.to() and Tensor.clone() are methods on the Tensor (torch's API) whose work is "
        "an op (Convert, Clone) with a backward; the op must live in ops/, above Tensor",
}


def module_name(path: str, root: str = ROOT) -> str:
    rel = os.path.relpath(path, os.path.dirname(root))[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def _type_checking_lines(if_nodes) -> set:
    lines = set()
    for node in if_nodes:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _calls_import_module(func: ast.AST) -> bool:
    """``ast.unparse(func).endswith("import_module")`` without unparsing every call: only a
    name or an attribute can end with it (a call, subscript or lambda ends otherwise)."""
    return (isinstance(func, ast.Name) and func.id.endswith("import_module")) or (
        isinstance(func, ast.Attribute) and func.attr.endswith("import_module"))


def imports_of(path: str, root: str = ROOT) -> Iterator[Tuple[str, int, bool]]:
    """(imported module, line, lazy) for each import in the file; relative imports resolved,
    ``from X import y`` yields X.y too (y may be a submodule)."""
    stat = os.stat(path)
    yield from _imports_of(path, root, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=None)
def _imports_of(path: str, root: str, mtime_ns: int, size: int) -> Tuple[Tuple[str, int, bool], ...]:
    """imports_of's answer, parsed once per file version: the three checks of the tree (layers,
    the allow-list, circles) read every file, and parsing and walking ~460 files is most of
    their time. One walk of the tree collects what each pass needs."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    name = module_name(path, root)
    package = name if path.endswith("__init__.py") else name.rsplit(".", 1)[0]
    if_nodes, import_nodes, call_nodes = [], [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            if_nodes.append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            import_nodes.append(node)
        elif isinstance(node, ast.Call):
            call_nodes.append(node)
    skip = _type_checking_lines(if_nodes)
    top_level = {id(node) for node in tree.body}
    found = []
    for node in import_nodes:
        if node.lineno in skip:
            continue
        lazy = id(node) not in top_level
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((alias.name, node.lineno, lazy))
            continue
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if node.module:
            found.append((base, node.lineno, lazy))
        for alias in node.names:
            found.append((f"{base}.{alias.name}", node.lineno, lazy))
    for node in call_nodes:       # importlib.import_module("cupy") counts as an import
        if _calls_import_module(node.func) and node.args \
                and isinstance(node.args[0], ast.Constant):
            found.append((str(node.args[0].value), node.lineno, True))
    return tuple(found)


def layer_of(module: str) -> Optional[str]:
    """The layer of a tinyattn module (None for other packages)."""
    parts = module.split(".")
    if parts[0] != "tinyattn":
        return None
    key = parts[1] if len(parts) > 1 else "tinyattn"
    if key not in LAYERS:
        raise KeyError(key)
    return LAYERS[key]


def python_files(root: str = ROOT) -> Iterator[str]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for file in sorted(files):
            if file.endswith(".py"):
                yield os.path.join(folder, file)


def _imported_tinyattn_module(target: str, root: str) -> str:
    """``tinyattn.nn.Module`` names a class in tinyattn.nn: the module is the longest
    prefix that is a file or folder (the layer is decided by the first part anyway)."""
    parts = target.split(".")
    for end in range(len(parts), 1, -1):
        candidate = os.path.join(os.path.dirname(root), *parts[:end])
        if os.path.isdir(candidate) or os.path.isfile(candidate + ".py"):
            return ".".join(parts[:end])
    return "tinyattn"


def layer_violations(root: str = ROOT, allowed: Optional[Dict] = None) -> List[str]:
    """Every import of a higher layer (and of CuPy outside backend) under ``root``."""
    allowed = ALLOWED_UPWARD if allowed is None else allowed
    found = []
    for path in python_files(root):
        here = module_name(path, root)
        try:
            own = layer_of(here)
        except KeyError as exc:
            found.append(f"{here}: '{exc.args[0]}' is in no layer; add it to LAYERS in "
                         f"tests/test_layers.py and to docs/architecture.md")
            continue
        for target, line, lazy in imports_of(path, root):
            if target.split(".")[0] in ("cupy", "cupyx") and here != "tinyattn.backend":
                found.append(f"{here}:{line} imports {target}: only tinyattn.backend knows CuPy")
                continue
            if not target.startswith("tinyattn.") and target != "tinyattn":
                continue
            target = _imported_tinyattn_module(target, root)
            try:
                theirs = layer_of(target)
            except KeyError as exc:
                found.append(f"{here}:{line} imports {target}, which is in no layer "
                             f"('{exc.args[0]}')")
                continue
            if LAYER_ORDER.index(theirs) <= LAYER_ORDER.index(own):
                continue
            key = (here, ".".join(target.split(".")[:2]))
            if lazy and key in allowed:
                continue
            found.append(f"{here}:{line} ({own}) imports {target} ({theirs})"
                         f"{' inside a function' if lazy else ''}")
    return sorted(set(found))


def test_no_module_imports_a_higher_layer():
    violations = layer_violations()
    assert not violations, "imports of a higher layer:\n" + "\n".join(violations)


def test_every_allowed_exception_is_still_needed():
    """An allow-list entry whose import is gone must go too (it would hide a later one)."""
    needed = set()
    for path in python_files():
        here = module_name(path)
        for target, _, lazy in imports_of(path):
            if target.startswith("tinyattn."):
                needed.add((here, ".".join(target.split(".")[:2])))
    assert set(ALLOWED_UPWARD) <= needed, set(ALLOWED_UPWARD) - needed


def _write(root, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_negative_control_a_lower_layer_importing_a_higher_one_is_caught(tmp_path):
    root = tmp_path / "tinyattn"
    _write(root, "__init__.py", "")
    _write(root, "nn/__init__.py", "")
    _write(root, "nn/module.py", "class Module: pass\n")
    _write(root, "ops/__init__.py", "from ..nn.module import Module\n")          # top level
    _write(root, "ops/softmax.py",
           "def f():\n    from tinyattn.models import bert\n    return bert\n")     # lazy
    _write(root, "models/__init__.py", "")
    _write(root, "models/bert.py", "from ..nn import module\n")                    # fine
    _write(root, "tensor.py", "import cupy\nfrom .ops import softmax\n")
    _write(root, "gadgets.py", "")                                                 # no layer
    found = "\n".join(layer_violations(str(root), allowed={}))
    assert "tinyattn.ops:1 (ops) imports tinyattn.nn.module (nn)" in found
    assert "tinyattn.ops.softmax:2 (ops) imports tinyattn.models" in found
    assert "inside a function" in found
    assert "tinyattn.tensor:1 imports cupy: only tinyattn.backend knows CuPy" in found
    assert "tinyattn.tensor:2 (tensor) imports tinyattn.ops" in found
    assert "'gadgets' is in no layer" in found
    assert not any(line.startswith("tinyattn.models.bert") for line in found.splitlines())


def test_negative_control_the_allow_list_covers_lazy_imports_only(tmp_path):
    root = tmp_path / "tinyattn"
    _write(root, "__init__.py", "")
    _write(root, "ops/__init__.py", "")
    _write(root, "tensor.py", "from . import ops\n"
                              "def to():\n    from .ops import convert\n    return convert\n")
    found = layer_violations(str(root), allowed={("tinyattn.tensor", "tinyattn.ops"): "why"})
    assert found == ["tinyattn.tensor:1 (tensor) imports tinyattn.ops (ops)"]


def test_the_architecture_doc_lists_every_layer_and_folder():
    with open(ARCHITECTURE, encoding="utf-8") as f:
        text = f.read()
    for layer in LAYER_ORDER:
        assert re.search(rf"\b{re.escape(layer)}\b", text), layer
    for key in LAYERS:
        if key != "tinyattn":
            assert f"`{key}" in text, f"docs/architecture.md does not place `{key}`"


# Import circles between two modules (not packages: a package's __init__ importing its own
# modules is how packages work) that stay, each with its reason.
ALLOWED_CIRCLES: Dict[Tuple[str, str], str] = {}


def _module_file_names(root: str = ROOT) -> Dict[str, str]:
    return {module_name(path, root): path for path in python_files(root)}


def import_circles(root: str = ROOT) -> List[Tuple[str, ...]]:
    """Circles of top-level imports between modules that are not packages' __init__.py."""
    files = _module_file_names(root)
    modules = {name for name, path in files.items() if not path.endswith("__init__.py")}
    edges: Dict[str, set] = {name: set() for name in modules}
    for name in modules:
        for target, _, lazy in imports_of(files[name], root):
            if not lazy and target in modules and target != name:
                edges[name].add(target)
    circles, seen = [], set()
    for start in sorted(modules):            # a short depth-first search from each module
        stack = [(start, (start,))]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(edges[node]):
                if nxt == start:
                    key = tuple(sorted(path))
                    if key not in seen:
                        seen.add(key)
                        circles.append(path)
                elif nxt not in path and len(path) < 6:
                    stack.append((nxt, path + (nxt,)))
    return circles


def test_no_two_modules_import_each_other():
    circles = [c for c in import_circles() if tuple(sorted(c)) not in ALLOWED_CIRCLES]
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_negative_control_an_import_circle_is_found(tmp_path):
    root = tmp_path / "tinyattn"
    _write(root, "__init__.py", "")
    _write(root, "nn/__init__.py", "from .module import Module\n")
    _write(root, "nn/module.py", "class Module: pass\nfrom .containers import ModuleList\n")
    _write(root, "nn/containers.py", "from .module import Module\nclass ModuleList: pass\n")
    circles = import_circles(str(root))
    assert len(circles) == 1 and set(circles[0]) == {"tinyattn.nn.module",
                                                     "tinyattn.nn.containers"}


def test_gpt_from_pretrained_finds_the_format_models_registered(monkeypatch):
    """nn.GPT.from_pretrained calls what tinyattn.models registered (nn imports no format);
    with nothing registered it says what to import instead of failing obscurely."""
    from tinyattn.models import gpt2
    from tinyattn.nn import gpt
    assert gpt._CHECKPOINT_FORMAT == {"load": gpt2.load_gpt2, "save": gpt2.save_gpt2}
    monkeypatch.setattr(gpt, "_CHECKPOINT_FORMAT", {})
    with pytest.raises(RuntimeError, match="need tinyattn.models"):
        gpt.GPT.from_pretrained("gpt2")
