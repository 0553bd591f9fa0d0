import time, json, numpy as np
import ozaki.fft as of
from ozaki.reference import dft_bins, l2_error
rng = np.random.default_rng(20261202)
N = 1 << 20
x = rng.random(N) - 0.5 + 1j * (rng.random(N) - 0.5)
t = time.time(); y = of.fft(x); t_ours = time.time() - t
ks = sorted(int(k) for k in rng.integers(0, N, 8))
t = time.time(); ref = dft_bins(x, ks); t_ref = time.time() - t
out = {"N": N, "bins": ks, "ozaki_l2": l2_error(y, ref, ks), "numpy_l2": l2_error(np.fft.fft(x), ref, ks),
       "cpu_seconds": t_ours, "ref_seconds": t_ref}
print(json.dumps(out))
