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


def _check(call, name, sig, positional_names, bad):
    """Append (line, name, why) to bad when ``call``'s arguments cannot bind to ``sig``."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return                                        # *args / **kwargs: not decidable here
    required, total, names, kwonly_required = sig
    given = len(call.args)
    keywords = {k.arg for k in call.keywords}
    if names is not None and not keywords <= names:
        bad.append((call.lineno, name, f"unknown keyword(s) {sorted(keywords - names)}"))
    if total is not None and given > total:
        bad.append((call.lineno, name, f"{given} positional arguments, at most {total}"))
    missing = [p for p in positional_names[given:required] if p not in keywords]
    missing += [k for k in kwonly_required if k not in keywords]
    if missing:
        bad.append((call.lineno, name, f"missing {missing}"))


def _positional_names(tree):
    return {n.name: [p.arg for p in n.args.posonlyargs + n.args.args]
            for n in tree.body if isinstance(n, ast.FunctionDef)}


def mismatches(source, siblings=None):
    """(line, function, why) for each call of a module-level function whose arguments
    cannot bind: by bare name (the module's own functions, unless the name is rebound
    somewhere), or as ``module.function`` for the sibling modules given ({name: source}).
    Calls with *args or **kwargs are skipped."""
    tree = ast.parse(source)
    own = signatures(tree), _positional_names(tree)
    others = {}
    for mod, text in (siblings or {}).items():
        t = ast.parse(text)
        others[mod] = signatures(t), _positional_names(t)
    shadowed = set()                      # names rebound anywhere (assignments, parameters)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            shadowed.add(node.id)
        elif isinstance(node, ast.arg):
            shadowed.add(node.arg)
    bad = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in own[0] and f.id not in shadowed:
            _check(node, f.id, own[0][f.id], own[1][f.id], bad)
        elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in others
              and f.value.id not in shadowed and f.attr in others[f.value.id][0]):
            sigs, names = others[f.value.id]
            _check(node, f"{f.value.id}.{f.attr}", sigs[f.attr], names[f.attr], bad)
    return bad


def _source(module):
    with open(os.path.join(BACKENDS, module)) as f:
        return f.read()


@pytest.mark.parametrize("module", MODULES)
def test_own_calls_fit_signatures(module):
    siblings = {name[:-3]: _source(name) for name in MODULES + ["numpy_backend.py"] if name != module}
    assert mismatches(_source(module), siblings) == []


def test_the_check_finds_a_missing_argument():
    source = "def f(m, width, k):\n    return m\n\ndef g(x):\n    return f(1, x)\n"
    assert mismatches(source) == [(5, "f", "missing ['k']")]
    assert mismatches(source.replace("f(1, x)", "f(1, x, k=2)")) == []
    assert mismatches(source.replace("f(1, x)", "f(1, x, 2, 3)"))[0][2] == "4 positional arguments, at most 3"
    assert mismatches(source.replace("f(1, x)", "f(1, x, kk=2)"))[0][2].startswith("unknown keyword")
    sibling = {"other": "def h(a, b=1):\n    return a\n"}
    assert mismatches("import other\nother.h()\n", sibling) == [(2, "other.h", "missing ['a']")]
    assert mismatches("import other\nother.h(1, b=2)\n", sibling) == []
