"""The GPU-only modules' calls to their own functions fit those functions' signatures,
checked on the source (CI has no GPU and these modules import CuPy): a positional count
outside the signature's range, or an unknown keyword, is a TypeError that only a device
run would otherwise meet (run ee1be8c: ``_wide_digits`` gained an argument its caller in
``residues`` did not pass, and every GPU product raised)."""

import ast
import os

import pytest

BACKENDS = os.path.join(os.path.dirname(__file__), "..", "..", "ozaki", "backends")
MODULES = ["cupy_backend.py", "graphs.py", "native.py"]


def signatures(tree):
    """{name: (required positional, total positional or None for *args, keyword names or
    None for **kwargs)} of the module-level functions."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            a = node.args
            positional = a.posonlyargs + a.args
            required = len(positional) - len(a.defaults)
            total = None if a.vararg else len(positional)
            names = None if a.kwarg else {p.arg for p in a.args + a.kwonlyargs}
            kwonly_required = {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None}
            out[node.name] = (required, total, names, kwonly_required)
    return out


def mismatches(source):
    """(line, function, why) for each call of a module-level function whose arguments
    cannot bind (calls with *args or **kwargs are skipped: not decidable here)."""
    tree = ast.parse(source)
    sigs = signatures(tree)
    shadowed = set()                      # names rebound anywhere (assignments, parameters)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            shadowed.add(node.id)
        elif isinstance(node, ast.arg):
            shadowed.add(node.arg)
    bad = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        name = node.func.id
        if name not in sigs or name in shadowed:
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            continue
        required, total, names, kwonly_required = sigs[name]
        given = len(node.args)
        keywords = {k.arg for k in node.keywords}
        if names is not None and not keywords <= names:
            bad.append((node.lineno, name, f"unknown keyword(s) {sorted(keywords - names)}"))
        if total is not None and given > total:
            bad.append((node.lineno, name, f"{given} positional arguments, at most {total}"))
        tree_fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        positional = [p.arg for p in tree_fn.args.posonlyargs + tree_fn.args.args]
        missing = [p for p in positional[given:required] if p not in keywords]
        missing += [k for k in kwonly_required if k not in keywords]
        if missing:
            bad.append((node.lineno, name, f"missing {missing}"))
    return bad


@pytest.mark.parametrize("module", MODULES)
def test_own_calls_fit_signatures(module):
    with open(os.path.join(BACKENDS, module)) as f:
        assert mismatches(f.read()) == []


def test_the_check_finds_a_missing_argument():
    source = "def f(m, width, k):\n    return m\n\ndef g(x):\n    return f(1, x)\n"
    assert mismatches(source) == [(5, "f", "missing ['k']")]
    assert mismatches(source.replace("f(1, x)", "f(1, x, k=2)")) == []
    assert mismatches(source.replace("f(1, x)", "f(1, x, 2, 3)"))[0][2] == "4 positional arguments, at most 3"
    assert mismatches(source.replace("f(1, x)", "f(1, x, kk=2)"))[0][2].startswith("unknown keyword")
