"""Deselects, by name, the borrowed numpy tests that test_numpy_matmul.DESELECTED lists (with reasons)."""


def pytest_configure(config):
    for marker in ("slow: numpy's marker for slow tests", "thread_unsafe: numpy's marker",
                   "leaks_references: numpy's marker", "xslow: numpy's marker",
                   "valgrind_error: numpy's marker"):
        config.addinivalue_line("markers", marker)


_reported = []


def pytest_collection_modifyitems(config, items):
    from . import test_numpy_matmul as conf
    keep, drop = [], []
    for item in items:
        key = f"{item.cls.__name__}::{item.name}" if getattr(item, "cls", None) else item.name
        if item.module is conf and key in conf.DESELECTED:
            drop.append(item)
            _reported.append((key, conf.DESELECTED[key]))
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _reported:
        return
    terminalreporter.write_line(f"conformance: {len(_reported)} of numpy's matmul/dot tests deselected "
                                "(tests/conformance/test_numpy_matmul.py DESELECTED; -v lists them)")
    if config.option.verbose > 0:
        for key, reason in _reported:
            terminalreporter.write_line(f"  {key}: {reason}")
