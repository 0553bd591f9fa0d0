"""For GPU tests of kernels behind cupy_backend.NEW_KERNELS: turn one on beside the others and
record the defines of every build of a kernel file compiled from then on, so that a test can
assert which builds took the new code (and cannot pass on the old one)."""


def new_kernel_on(monkeypatch, name, file):
    """NEW_KERNELS ``name`` on beside those already on (the defaults, or OZAKI_NEW_KERNELS's
    setting for the run); returns the list that collects the defines (as dicts) of every
    ``file`` build cupy_backend._kernel compiles from then on."""
    from ozaki.backends import cupy_backend
    on = [n for n in cupy_backend.NEW_KERNELS if cupy_backend._new_kernel(n)]     # the defaults, or the run's setting
    monkeypatch.setenv("OZAKI_NEW_KERNELS", ",".join(dict.fromkeys(on + [name])))
    builds = []
    real = cupy_backend._kernel

    def spy(kernel_file, function, defines, *args, **kw):
        if kernel_file == file:
            builds.append(dict(defines))
        return real(kernel_file, function, defines, *args, **kw)
    monkeypatch.setattr(cupy_backend, "_kernel", spy)
    return builds
