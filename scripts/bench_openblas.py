#!/usr/bin/python3
"""Times float32 matrix products with numpy's BLAS (OpenBLAS on Debian), the
baseline lgflow's GEMM benchmarks are compared with in the same run.

Usage: /usr/bin/python3 scripts/bench_openblas.py [threads ...]

numpy must run on OpenBLAS: Debian's python3-numpy links the reference BLAS
(about 6 GFLOP/s) unless libopenblas0-pthread is installed too; the script
stops with that advice when it finds no OpenBLAS loaded.

Each thread count runs in a fresh process with OPENBLAS_NUM_THREADS set
(OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed, so OpenBLAS picks its own
kernel), and prints GFLOP/s for 512^3 and 1024^3: the best of five timings of
a loop of products lasting about 0.3 s each.
"""
import os
import subprocess
import sys

CHILD = r'''
import time, numpy as np
np.ones((64, 64), np.float32) @ np.ones((64, 64), np.float32)
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "blas" in l.lower() and "/" in l})
print("blas " + (" ".join(libs) or "none"))
np.random.seed(0)
for n in (512, 1024):
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    c = a @ b
    reps = max(1, int(0.3 / max(1e-6, (lambda t0: (a @ b, time.perf_counter() - t0)[1])(time.perf_counter()))))
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            np.matmul(a, b, out=c)
        best = min(best, (time.perf_counter() - t0) / reps)
    print(f"{n}^3 {2 * n**3 / best / 1e9:.1f} GFLOP/s")
'''


def main():
    threads = sys.argv[1:] or ["1", "2"]
    for t in threads:
        env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
        env["OPENBLAS_NUM_THREADS"] = t
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True).stdout
        lines = out.splitlines()
        blas = lines[0].removeprefix("blas ")
        if "openblas" not in blas.lower():
            sys.exit(f"numpy's matrix products run on {blas}, not OpenBLAS: install it (Debian: apt-get install libopenblas0-pthread)")
        for line in lines[1:]:
            print(f"openblas threads={t} {line}")


if __name__ == "__main__":
    main()
