#!/usr/bin/env bash
# gpu-campaign.sh: train the planar models on an NVIDIA GPU, evaluate with
# examples/planar, and bring the models back in files small enough for a
# remote runner (at most 8 files of at most 16 MiB).
#
# Two starting points (-from):
#
#   pretrained  (default) continue the shipped planar LG-Flow
#               (pretrained/planar/flow-state.safetensors, flow preset `cpu`,
#               batches of 256 at 5e-5, its EMA and AdamW moments kept) in the
#               latent space of the shipped LG-VAE: the whole budget goes to
#               the flow. The model stays small, so CPU sampling stays fast.
#               On an H100 this runs at 35-37 steps/s: 33k steps in 15 min
#               took the degree MMD from 3.0 to 0.6 (docs/results.md).
#   scratch     train the `paper` LG-VAE (-vae-share of the budget), then
#               LG-Flow with DiT-T (-flow-preset T). The paper's LG-VAE needs
#               ~50k steps; at 17 steps/s on an H100, 7 minutes reach edge
#               accuracy 0.97 and no graph decoded exactly: a window of 30
#               minutes is too short for this.
#
# The campaign is resumable: everything it has done lives in -dir (default
# runs/gpu-campaign, git-ignored), and each command carries on from there.
# Two ways to drive it:
#
#   legs      scripts/gpu-campaign.sh leg -budget 25m      # repeat until it prints "campaign: done"
#             Each leg runs for at most -leg (default 8m30s) and stops
#             cleanly (training writes its resumable state first), so it fits
#             a command limit of 9-10 minutes.
#   detached  scripts/gpu-campaign.sh start -budget 25m    # returns at once (setsid)
#             scripts/gpu-campaign.sh status               # phase, time used, last log lines
#             scripts/gpu-campaign.sh stop                 # ends the detached run (resumable)
#
# Then:       scripts/gpu-campaign.sh collect "$OUT"       # models, report.json, log
#
# collect writes the flow in float32 when it fits one file of 15 MiB (else
# f16 shards), the LG-VAE when the campaign trained one, and the flow's
# resumable state cut in parts of 15 MiB (join them with
# `cat flow-state.safetensors.part-* > flow-state.safetensors`); in a
# scratch campaign stopped during the LG-VAE phase, the LG-VAE's state in
# parts instead, to resume it in the next window (cat the parts into
# runs/gpu-campaign/vae/state.safetensors there, and carry that path).
#
# -budget is the GPU training time of the whole campaign, -vae-share the
# LG-VAE's part of it (scratch only); the evaluation comes on top
# (sampling 256 graphs with the denoiser on the GPU, decoding and metrics on
# the CPU: a few minutes). The binaries come from `go build` when Go is
# installed, else from gpubin/ (make them where Go is: scripts/gpu-campaign.sh
# build; CGO_ENABLED=0, so they need no CUDA to build).
#
# Flags (after the command): -from pretrained|scratch, -budget D,
# -vae-share F, -leg D, -dir DIR, -bin DIR, -device cuda|cpu, -vae-preset P,
# -flow-preset P, -vae-args "...", -flow-args "...", -eval-args "..." (extra
# flags for train-vae, train-flow and examples/planar; -device cpu with the
# cpu/tiny presets and a budget of a minute smoke-tests the script without a
# GPU).
set -euo pipefail

cd "$(dirname "$0")/.."

cmd=${1:-help}
[ $# -gt 0 ] && shift

from=pretrained
budget=25m
vae_share=0.35
leg=8m30s
dir=runs/gpu-campaign
bin=""
device=cuda
vae_preset=paper
flow_preset=""
vae_args=""
flow_args=""
flow_args_set=""
eval_args=""
while [ $# -gt 0 ]; do
	case "$1" in
	-from) from=$2; shift 2 ;;
	-budget) budget=$2; shift 2 ;;
	-vae-share) vae_share=$2; shift 2 ;;
	-leg) leg=$2; shift 2 ;;
	-dir) dir=$2; shift 2 ;;
	-bin) bin=$2; shift 2 ;;
	-device) device=$2; shift 2 ;;
	-vae-preset) vae_preset=$2; shift 2 ;;
	-flow-preset) flow_preset=$2; shift 2 ;;
	-vae-args) vae_args=$2; shift 2 ;;
	-flow-args) flow_args=$2; flow_args_set=1; shift 2 ;;
	-eval-args) eval_args=$2; shift 2 ;;
	*) [ "$cmd" = collect ] && [ -z "${collect_dir:-}" ] && { collect_dir=$1; shift; continue; }
	   echo "gpu-campaign: unknown argument $1" >&2; exit 2 ;;
	esac
done

# seconds D: a duration such as 25m, 8m30s, 1h, 90s or 90 in seconds.
seconds() {
	local d=$1 total=0 n
	if [[ $d =~ ^[0-9]+$ ]]; then echo "$d"; return; fi
	while [[ $d =~ ^([0-9]+)([hms])(.*)$ ]]; do
		n=${BASH_REMATCH[1]}
		case ${BASH_REMATCH[2]} in h) n=$((n * 3600)) ;; m) n=$((n * 60)) ;; esac
		total=$((total + n))
		d=${BASH_REMATCH[3]}
	done
	if [ -n "$d" ]; then echo "gpu-campaign: bad duration $1" >&2; exit 2; fi
	echo "$total"
}

case $from in
pretrained)
	# Everything to the flow, which continues the shipped one.
	vae_file=pretrained/planar/vae.safetensors
	flow_state=pretrained/planar/flow-state.safetensors
	first_phase=flow
	[ -n "$flow_preset" ] || flow_preset=cpu
	[ -n "$flow_args_set" ] || flow_args="-config batch_size=256,lr=5e-5,steps=10000000"
	;;
scratch)
	vae_file=$dir/vae/vae.safetensors
	flow_state=""
	first_phase=vae
	[ -n "$flow_preset" ] || flow_preset=T
	;;
*) echo "gpu-campaign: -from must be pretrained or scratch, not $from" >&2; exit 2 ;;
esac

budget_s=$(seconds "$budget")
leg_s=$(seconds "$leg")
vae_budget_s=0
[ "$from" = scratch ] && vae_budget_s=$(awk -v b="$budget_s" -v f="$vae_share" 'BEGIN { printf "%d", b * f }')
flow_budget_s=$((budget_s - vae_budget_s))
log=$dir/campaign.log
mkdir -p "$dir"

say() { echo "campaign: $*" | tee -a "$log" >&2; }

# state NAME [DEFAULT]: a value kept in $dir (phase, seconds used).
state() { if [ -f "$dir/$1" ]; then cat "$dir/$1"; else echo "${2:-}"; fi; }
set_state() { echo "$2" > "$dir/$1.tmp" && mv "$dir/$1.tmp" "$dir/$1"; }

binaries() {
	if [ -n "$bin" ]; then
		LGFLOW=$bin/lgflow PLANAR=$bin/planar
	elif command -v go > /dev/null; then
		mkdir -p "$dir/bin"
		CGO_ENABLED=0 go build -o "$dir/bin/lgflow" ./cmd/lgflow
		CGO_ENABLED=0 go build -o "$dir/bin/planar" ./examples/planar
		LGFLOW=$dir/bin/lgflow PLANAR=$dir/bin/planar
	else
		LGFLOW=gpubin/lgflow PLANAR=gpubin/planar
	fi
	for b in "$LGFLOW" "$PLANAR"; do
		[ -x "$b" ] || { echo "gpu-campaign: no binary $b (run scripts/gpu-campaign.sh build where Go is, or pass -bin)" >&2; exit 1; }
	done
}

# timed PHASE CMD...: runs CMD with its output in the log and adds its wall
# time to PHASE's seconds used.
timed() {
	local phase=$1 start end rc=0
	shift
	start=$(date +%s)
	echo "+ $*" >> "$log"
	"$@" >> "$log" 2>&1 || rc=$?
	end=$(date +%s)
	set_state "$phase.used_s" $(($(state "$phase.used_s" 0) + end - start))
	return $rc
}

# run LIMIT_S: carries the campaign on for at most LIMIT_S seconds of wall time.
run() {
	local limit=$1 deadline phase left budget_left t step
	deadline=$(($(date +%s) + limit))
	binaries
	while :; do
		phase=$(state phase "$first_phase")
		left=$((deadline - $(date +%s) - 20))
		case $phase in
		vae)
			budget_left=$((vae_budget_s - $(state vae.used_s 0)))
			if [ "$budget_left" -lt 30 ]; then set_state phase vae-final; continue; fi
			t=$((budget_left < left - 60 ? budget_left : left - 60))
			if [ "$t" -lt 30 ]; then say "leg over (LG-VAE: $(state vae.used_s 0)s of ${vae_budget_s}s used)"; return 0; fi
			say "LG-VAE: training for ${t}s (preset $vae_preset, $device)"
			# shellcheck disable=SC2086
			timed vae "$LGFLOW" train-vae -dataset planar -preset "$vae_preset" -device "$device" -out "$dir/vae" \
				-max-time "${t}s" -config log_every=25 $vae_args
			;;
		vae-final)
			# The flow needs vae.safetensors, written at validations (the
			# best so far): train one more step and validate it, so that the
			# latest weights are considered too.
			if [ "$left" -lt 180 ]; then say "leg over (LG-VAE validation next)"; return 0; fi
			step=0
			[ -f "$dir/vae/state.safetensors" ] && step=$("$LGFLOW" convert -i "$dir/vae/state.safetensors" -meta step)
			say "LG-VAE: validating after step $((step + 1))"
			# shellcheck disable=SC2086
			timed vae "$LGFLOW" train-vae -dataset planar -preset "$vae_preset" -device "$device" -out "$dir/vae" \
				$vae_args -config steps=$((step + 1)),val_every=1
			[ -f "$dir/vae/vae.safetensors" ] || { say "LG-VAE: no vae.safetensors after validation"; return 1; }
			set_state phase flow
			;;
		flow)
			budget_left=$((flow_budget_s - $(state flow.used_s 0)))
			if [ "$budget_left" -lt 30 ]; then set_state phase eval; continue; fi
			t=$((budget_left < left - 120 ? budget_left : left - 120))
			if [ "$t" -lt 30 ]; then say "leg over (LG-Flow: $(state flow.used_s 0)s of ${flow_budget_s}s used)"; return 0; fi
			if [ -n "$flow_state" ] && [ ! -f "$dir/flow/state.safetensors" ]; then
				[ -f "$flow_state" ] || { say "no $flow_state to continue (is pretrained/planar in the working tree?)"; return 1; }
				mkdir -p "$dir/flow"
				cp "$flow_state" "$dir/flow/state.safetensors"
				say "LG-Flow: continuing $flow_state"
			fi
			say "LG-Flow: training for ${t}s (preset $flow_preset, $device)"
			# val_every=0: no validation sampling on the CPU (minutes with
			# DiT-T); flow.safetensors is then written at the end of each leg.
			# shellcheck disable=SC2086
			timed flow "$LGFLOW" train-flow -vae "$vae_file" -dataset planar -preset "$flow_preset" -device "$device" \
				-out "$dir/flow" -max-time "${t}s" -config val_every=0,log_every=100 $flow_args
			;;
		eval)
			if [ "$left" -lt 240 ]; then say "leg over (evaluation next)"; return 0; fi
			say "evaluating: examples/planar $eval_args"
			# shellcheck disable=SC2086
			timed eval "$PLANAR" -vae "$vae_file" -flow "$dir/flow/flow.safetensors" -device "$device" \
				-out "$dir/eval" $eval_args
			set_state phase done
			;;
		done)
			say "done: LG-VAE $(state vae.used_s 0)s, LG-Flow $(state flow.used_s 0)s, evaluation $(state eval.used_s 0)s; report in $dir/eval/report.json"
			return 0
			;;
		*)
			say "unknown phase $phase in $dir/phase"
			return 1
			;;
		esac
	done
}

case $cmd in
build)
	mkdir -p gpubin
	CGO_ENABLED=0 go build -o gpubin/lgflow ./cmd/lgflow
	CGO_ENABLED=0 go build -o gpubin/planar ./examples/planar
	echo "built gpubin/lgflow and gpubin/planar"
	;;
leg)
	run "$leg_s"
	;;
run-all)
	run $((budget_s * 3 + 3600))
	;;
start)
	if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2> /dev/null; then
		echo "gpu-campaign: already running (pid $(cat "$dir/pid"))" >&2
		exit 1
	fi
	setsid nohup "$0" run-all -budget "$budget" -vae-share "$vae_share" -dir "$dir" ${bin:+-bin "$bin"} -device "$device" \
		-vae-preset "$vae_preset" -flow-preset "$flow_preset" -vae-args "$vae_args" -flow-args "$flow_args" -eval-args "$eval_args" \
		>> "$log" 2>&1 < /dev/null &
	echo $! > "$dir/pid"
	echo "gpu-campaign: started (pid $!); scripts/gpu-campaign.sh status to follow"
	;;
status)
	running=no
	if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2> /dev/null; then running="yes (pid $(cat "$dir/pid"))"; fi
	echo "phase $(state phase "$first_phase"); running $running; used: LG-VAE $(state vae.used_s 0)/${vae_budget_s}s, LG-Flow $(state flow.used_s 0)/${flow_budget_s}s, evaluation $(state eval.used_s 0)s"
	[ -f "$log" ] && tail -n 15 "$log"
	;;
stop)
	if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2> /dev/null; then
		# The whole session: the script and the training command, which
		# writes its resumable state on SIGTERM.
		kill -TERM -- "-$(cat "$dir/pid")"
		echo "gpu-campaign: stopped"
	else
		echo "gpu-campaign: not running"
	fi
	;;
collect)
	out=${collect_dir:?usage: scripts/gpu-campaign.sh collect OUTDIR}
	mkdir -p "$out"
	binaries
	files=()
	if [ "$from" = scratch ] && [ -f "$dir/vae/vae.safetensors" ]; then
		# Full precision: a flow is bound to its LG-VAE's exact weights.
		"$LGFLOW" convert -i "$dir/vae/vae.safetensors" -o "$out/vae.safetensors" -shard-size 15MiB
	fi
	if [ -f "$dir/flow/flow.safetensors" ]; then
		if [ "$(wc -c < "$dir/flow/flow.safetensors")" -le $((15 << 20)) ]; then
			cp "$dir/flow/flow.safetensors" "$out/flow.safetensors"
		else
			"$LGFLOW" convert -i "$dir/flow/flow.safetensors" -o "$out/flow.safetensors" -dtype f16 -shard-size 15MiB
		fi
	fi
	if [ "$from" = pretrained ] && [ -f "$dir/flow/state.safetensors" ]; then
		split -b 15M "$dir/flow/state.safetensors" "$out/flow-state.safetensors.part-"
	fi
	if [ "$from" = scratch ] && [ "$(state phase "$first_phase")" = vae ] && [ -f "$dir/vae/state.safetensors" ]; then
		# The LG-VAE is not done: its state, to carry into the next window's
		# $dir/vae/state.safetensors (cat the parts) and resume there.
		split -b 15M "$dir/vae/state.safetensors" "$out/vae-state.safetensors.part-"
	fi
	[ -f "$dir/eval/report.json" ] && cp "$dir/eval/report.json" "$out/"
	[ -f "$log" ] && tail -c 4000000 "$log" > "$out/campaign.log"
	n=$(find "$out" -maxdepth 1 -type f | wc -l)
	if [ "$n" -lt 8 ] && [ -f "$dir/eval/samples.g6" ]; then cp "$dir/eval/samples.g6" "$out/"; fi
	ls -l "$out"
	n=$(find "$out" -maxdepth 1 -type f | wc -l)
	big=$(find "$out" -maxdepth 1 -type f -size +16M | wc -l)
	if [ "$n" -gt 8 ] || [ "$big" -gt 0 ]; then
		echo "gpu-campaign: $n files, $big over 16 MiB: more than the runner returns" >&2
		exit 1
	fi
	;;
*)
	sed -n '2,/^set -euo/{/^set -euo/!p}' "$0" | sed 's/^# \{0,1\}//'
	[ "$cmd" = help ] || exit 2
	;;
esac
