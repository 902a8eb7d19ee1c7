#!/usr/bin/env bash
# Running tgrad on a lent GPU machine whose image has another Triton (3.6 on the H200 image of
# 2026-12, where tgrad's kernels need 3.9: ``tl.to_tensor``) and no network: carry Triton 3.9.
#
#   benchmarks/gpu_carry.sh pack          # here, once (~3 min): writes .gpu/ (~52 MB, git-ignored
#                                         # through .git/info/exclude), under the 64 MiB a call carries
#   benchmarks/gpu_carry.sh run CMD...    # there, as the device call's command, with carry [".gpu"]:
#                                         # unpacks Triton 3.9 to /tmp/site, then runs CMD with it
#
# e.g. the device call: bash benchmarks/gpu_carry.sh run python3 benchmarks/gpu_check.py \
#        --json $OUT/gpu_check.json --test-log $OUT/tests.log --budget-s 330 --test-budget-s 150
#
# The wheel (285 MB) is cut to what an NVIDIA GPU needs: no AMD backend, profiler or CUPTI, and
# libtriton.so stripped of symbols (476 -> 183 MiB, 36 MiB as xz). Triton's backend discovery then
# looks in its own tree only (the image's Triton 3.6 still advertises an AMD backend), and ptxas
# is the machine's own CUDA one: Triton 3.9 compiles sm_90 with ``ptxas-blackwell``, left out here.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
pack)
  work=$(mktemp -d)
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 -d "$work" triton==3.9.0
  (cd "$work" && unzip -q triton-*.whl)
  rm -rf "$work"/triton/backends/amd "$work"/triton/backends/nvidia/lib/cupti* "$work"/triton/_C/libproton.so \
         "$work"/triton/instrumentation "$work"/triton/backends/nvidia/bin/ptxas-blackwell "$work"/triton-*.whl
  sed -i '/^amd = /d' "$work"/triton-3.9.0.dist-info/entry_points.txt
  mkdir -p .gpu
  grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
  strip --strip-unneeded "$work"/triton/_C/libtriton.so
  xz -T0 -9 -c "$work"/triton/_C/libtriton.so > .gpu/libtriton.so.xz
  tar cf - -C "$work" --exclude=triton/_C/libtriton.so triton triton-3.9.0.dist-info | xz -T0 -6 > .gpu/triton-rest.tar.xz
  rm -rf "$work"
  du -sh .gpu
  ;;
run)
  shift
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,memory.used --format=csv || true
  if [ ! -f /tmp/site/triton/_C/libtriton.so ]; then
    mkdir -p /tmp/site
    tar xJf .gpu/triton-rest.tar.xz -C /tmp/site
    xz -T4 -dc .gpu/libtriton.so.xz > /tmp/site/triton/_C/libtriton.so
  fi
  export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TRITON_CACHE_DIR=/tmp/tcache TRITON_BACKENDS_IN_TREE=1
  if ! python3 -c "import triton; print('triton', triton.__version__, triton.__file__)"; then
    echo "the carried Triton does not import: the image's own" && unset PYTHONPATH
  fi
  ptxas=$(command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1 || true)
  export TRITON_PTXAS_BLACKWELL_PATH="$ptxas" TRITON_PTXAS_PATH="$ptxas"
  echo "ptxas: $ptxas"
  "$@"
  ;;
*)
  sed -n '2,12p' "$0"
  exit 2
  ;;
esac
