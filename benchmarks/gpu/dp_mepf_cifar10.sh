#!/usr/bin/env bash
# DP-MEPF on CIFAR-10 at GPU scale (configs/dp_mepf_cifar10_eps10_gpu.yaml) in one command of under 10 minutes:
# time TIME_STEPS (200) generator steps, set trainer.max_steps to fill FILL_S (480) seconds, train with dpzoo fit,
# and write the model folder to OUTDIR/model (about 6 MB), with OUTDIR/timing.json (seconds per step, device) and
# OUTDIR/fit.log, so that sampling, FID and CAS run back on a CPU (benchmarks/gpu/README.md).
#
#     benchmarks/gpu/dp_mepf_cifar10.sh OUTDIR [FIT_OPTION ...]
#
# The one release comes from RELEASE, a release checkpoint drawn where the private images are
# (benchmarks/gpu/released_data.py): the fits resume from it and never read a record, so the images need not
# travel. Without RELEASE it is drawn here first, from the CIFAR-10 training images under DPZOO_DATA_DIR (or
# downloaded); RELEASE_ONLY=1 draws it into OUTDIR/release.ckpt and stops, on the machine that holds them. Every
# FIT_OPTION goes to every dpzoo fit (the CPU smoke test, tests/zoo/test_gpu_dp_mepf.py, shrinks the model with
# them). PYTHON (python3) runs dpzoo from this checkout.
set -euo pipefail
if [ $# -lt 1 ]; then
    sed -n '2,14p' "$0" >&2
    exit 2
fi
outdir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
time_steps=${TIME_STEPS:-200}
fill_s=${FILL_S:-480}
export PYTHONPATH="$here:$root${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
log=$outdir/fit.log
if [ -z "${RELEASE_ONLY:-}" ] && [ -e "$outdir/model" ]; then
    echo "$outdir/model exists: give an empty OUTDIR" >&2
    exit 2
fi

fit() {  # dpzoo fit of the GPU recipe with the given options, its output in the log (shown when it fails)
    echo "== dpzoo fit $*" >>"$log"
    if ! (cd "$root" && "$python" -m zoo.cli fit --config configs/dp_mepf_cifar10_eps10_gpu.yaml \
        --trainer.enable_progress_bar false "$@" >>"$log" 2>&1); then
        tail -n 30 "$log" >&2
        return 1
    fi
}

release=${RELEASE:-}
if [ -z "$release" ]; then
    if [ -n "${RELEASE_ONLY:-}" ]; then
        release=$outdir/release.ckpt
    else
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
        release=$work/release.ckpt
    fi
    echo "drawing the release from the private images into $release"
    fit "$@" --save_pretrained null --trainer.max_steps 1 "--trainer.callbacks+=released_data.ReleaseCheckpoint" \
        --trainer.callbacks.path "$release" --trainer.callbacks.stop true
fi
if [ -n "${RELEASE_ONLY:-}" ]; then
    echo "released: $release"
    exit 0
fi
release=$(cd "$(dirname "$release")" && pwd)/$(basename "$release")
resume=(--data released_data.ReleasedData --data.release "$release" --ckpt_path "$release")

echo "timing $time_steps steps"
fit "${resume[@]}" "$@" --save_pretrained null --trainer.max_steps "$time_steps" \
    "--trainer.callbacks+=step_times.StepTimes" --trainer.callbacks.path "$outdir/timing.json"
steps=$("$python" -c 'import json, sys; print(max(1, int(float(sys.argv[2]) / json.load(open(sys.argv[1]))["seconds_per_step"])))' \
    "$outdir/timing.json" "$fill_s")
echo "training $steps steps (${fill_s} s at $(grep -o '"seconds_per_step": [0-9.e-]*' "$outdir/timing.json" | cut -d' ' -f2) s a step)"
start=$(date +%s)
fit "${resume[@]}" "$@" --trainer.max_steps "$steps" --save_pretrained "$outdir/model"
echo "trained $steps steps in $(( $(date +%s) - start )) s: $outdir/model" | tee -a "$log"
