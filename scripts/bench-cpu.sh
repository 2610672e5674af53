#!/bin/sh
# Measures what issue #45 asks about on this machine, in one run, idle:
# lgflow's float32 GEMM on one and on every thread against OpenBLAS (numpy,
# unpinned) at 512^3 and 1024^3, and the DiT and LG-VAE training steps on
# one and two threads. Run it from the repository root on an idle machine:
#
#	sh scripts/bench-cpu.sh
#
# The OpenBLAS rows need Debian's python3-numpy and libopenblas0-pthread (without
# the latter numpy runs on the reference BLAS, and bench_openblas.py stops with
# that advice); they are skipped without numpy.
set -eu
cpus=$(getconf _NPROCESSORS_ONLN)
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $cpus CPUs, $(go version | cut -d' ' -f3)"
go test -run XXX -bench 'MatMul(1Thread)?/(512|1024)$' -count 3 ./tensor/ | grep '^Benchmark'
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	/usr/bin/python3 scripts/bench_openblas.py 1 "$cpus"
	/usr/bin/python3 scripts/bench_openblas.py 1 "$cpus"
else
	echo "# no numpy for /usr/bin/python3: no OpenBLAS baseline"
fi
go test -run XXX -bench 'TrainStep/small' -cpu "1,$cpus" -count 2 ./dit/ ./vae/ | grep '^Benchmark'
