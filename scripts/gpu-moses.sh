#!/usr/bin/env bash
# gpu-moses.sh: continue the shipped MOSES LG-Flow (DiT-T) on an NVIDIA GPU
# and bring its EMA weights back in files small enough for a remote runner
# (half precision, shards of at most 15 MiB).
#
#   scripts/gpu-moses.sh OUTDIR [train-flow flags...]
#
# The run starts from pretrained/moses/flow.safetensors (-init: fresh AdamW
# moments; the EMA starts from the loaded weights) in the latent space of
# pretrained/moses/vae.safetensors, with the recipe that made the shipped
# flow (docs/results.md, session 21): batches of 1024, time_mean 1,
# bucket_by_size, EMA 0.998, and a learning rate falling linearly from
# 3e-4 to zero over the run. Flags after OUTDIR override it, e.g.
# -config steps=8000,cooldown=8000 -max-time 8m. On an H200 it runs at about
# 20 steps/s.
#
# Environment: LGFLOW (the lgflow binary; default: go run ./cmd/lgflow),
# DATA (the data directory holding moses/; default ../shared/data), VAE and
# FLOW (the starting models), WORK (the run's directory, kept so that a later
# call with the same WORK continues it; default: a temporary one, removed).
#
#   scripts/gpu-moses.sh pack
#
# prepares a GPU call here: builds gpubin/lgflow (CGO_ENABLED=0, so no CUDA
# is needed to build it), copies VAE, FLOW (here by default the shipped
# mid-path expert, the flow a MOSES window is best spent on: cuda/GPU_TODO.md
# item 5) and DATA/moses into gpubin/ (the
# runner's 64 MiB do not hold the tree's pretrained/ folder beside them) and
# prints the commands to run.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = pack ]; then
	vae=${VAE:-pretrained/moses/vae.safetensors}
	flow=${FLOW:-pretrained/moses/flow-expert.safetensors}
	data=${DATA:-../shared/data}
	mkdir -p gpubin/moses gpubin/data
	CGO_ENABLED=0 go build -o gpubin/lgflow ./cmd/lgflow
	cp "$vae" gpubin/moses/vae.safetensors
	cp "$flow" gpubin/moses/flow.safetensors
	rm -rf gpubin/data/moses
	cp -r "$data/moses" gpubin/data/moses
	chmod -R u+w gpubin/data
	echo "gpu-moses: gpubin/ holds $(du -sh gpubin | cut -f1). Then:"
	echo "  git sparse-checkout set --no-cone '/*' '!/pretrained/'   # here, before the call"
	echo "  run (carry gpubin): LGFLOW=gpubin/lgflow DATA=gpubin/data VAE=gpubin/moses/vae.safetensors \\"
	echo "    FLOW=gpubin/moses/flow.safetensors WORK=/tmp/mid scripts/gpu-moses.sh \"\$OUT/mid\" \\"
	echo "    -config time_mean=0.2,time_std=0.35,lr=1e-4,steps=8000,cooldown=8000 -max-time 8m"
	echo "  git sparse-checkout disable   # here, after it"
	echo "A call returns at most 8 files: one run's log and f16 shards are 5."
	exit 0
fi

out=${1:?usage: scripts/gpu-moses.sh OUTDIR [train-flow flags...]}
shift
lgflow=${LGFLOW:-go run ./cmd/lgflow}
data=${DATA:-../shared/data}
vae=${VAE:-pretrained/moses/vae.safetensors}
flow=${FLOW:-pretrained/moses/flow.safetensors}
if [ -n "${WORK:-}" ]; then
	work=$WORK # kept: a later call with the same WORK continues the run
else
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
fi

mkdir -p "$out"
# shellcheck disable=SC2086 # $lgflow may be a command with arguments
$lgflow train-flow -vae "$vae" -dataset moses -data "$data" -device cuda -preset T -init "$flow" \
	-config time_mean=1,bucket_by_size=true,val_every=0,batch_size=1024,lr=3e-4,steps=4000,cooldown=4000 \
	-config ema_beta=0.998,ema_after=0,log_every=100 -out "$work" "$@" 2>&1 | tee "$out/train.log"
# shellcheck disable=SC2086
$lgflow convert -i "$work/last.safetensors" -o "$out/flow.safetensors" -dtype f16 -shard-size 15MiB
echo "gpu-moses: join the shards here with" \
	"lgflow convert -i $out/flow.safetensors -o flow.safetensors -dtype f16 -shard-size 64MiB"
