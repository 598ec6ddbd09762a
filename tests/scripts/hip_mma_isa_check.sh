#!/usr/bin/env bash
# The matrix-unit prefill's AMD forms (backend-hip/kernels/hip_mma.h: the matmul and the
# attention) compile to the instructions they are written for: no AMD GPU runs them here, so this
# is what keeps a guard or a builtin's signature from silently turning them into the empty kernel
# (kind 0, the f32 tiles).
#   hip_mma_isa_check.sh <source dir> <hipcc> [clang++-16 or newer]
# - gfx90a with Debian's hipcc: v_mfma_f32_16x16x16f16 in every k_mat_mul_mma, k_attention_mma and
#   k_attention_split_mma;
# - gfx1100 with clang 16+ (Debian's hipcc, clang 15, has no WMMA builtins): v_wmma_f32_16x16x16_f16;
#   device code only (-nogpulib: ROCm 5.2's device libraries predate gfx11), so it checks the
#   source and the instruction selection, not a runnable binary;
# - gfx1030 (no matrix units): no such instruction.
set -euo pipefail
src="$1" hipcc="$2" clang16="${3:-}"
matmul="$src/backend-hip/kernels/hip_matmul_mma.hip"
attn="$src/backend-hip/kernels/hip_attention.hip"
inc=(-I"$src/backend-hip/src" -I"$src/backend-hip/kernels" -I"$src/core/include")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0

# expect NAME COMPILER ARCH FILE PATTERN COUNT: the device assembly of FILE for ARCH holds
# PATTERN COUNT times.
expect() {
  local name="$1" cc="$2" arch="$3" file="$4" pattern="$5" want="$6" extra=()
  [ "$cc" = "$hipcc" ] || extra=(-x hip -nogpulib)
  "$cc" "${extra[@]}" -O3 -std=c++20 "${inc[@]}" --offload-arch="$arch" --cuda-device-only -S \
    "$file" -o "$tmp/$name.s" 2> "$tmp/$name.log" || { cat "$tmp/$name.log"; exit 1; }
  local n
  n=$(grep -c "$pattern" "$tmp/$name.s" || true)
  echo "$name ($arch, $(basename "$cc")): $n x $pattern (expected $want)"
  [ "$n" -eq "$want" ] || { echo "FAIL: $name"; status=1; }
}

# The matmul: 28 instantiations (9 file types and 3 repacked, each reading f32 or f16
# activations; repacked Q4_0 / Q8_0 also with their f32 decode: 24 + 4) in each tile width; a
# wave's fragments per 16-deep step, 4 steps a tile: 64-token tiles wave64 4 row x 2 token
# fragments, wave32 2 x 2; 128-token tiles twice the token fragments.
# The attention, head_dim 64 and 128: the prefill's per tile and 16-row fragment 2 x head_dim /
# 16 products for S and as many for P V, 2 row fragments a wave on wave64, 1 on wave32; the
# decode split's head_dim / 16 for S and as many for P V (one 16-row fragment, 16 positions), in
# blocks of 4 and of 16 query heads.
expect matmul-mfma "$hipcc" gfx90a "$matmul" 'v_mfma_f32_16x16x16f16' $((28 * 4 * (8 + 16)))
expect attention-mfma "$hipcc" gfx90a "$attn" 'v_mfma_f32_16x16x16f16' $((2 * 4 * (4 + 8) + 2 * 2 * (4 + 8)))
expect matmul-none "$hipcc" gfx1030 "$matmul" 'v_mfma\|v_wmma' 0
if [ -z "$clang16" ] || ! command -v "$clang16" > /dev/null; then
  echo "SKIP gfx1100: no clang 16+ (Debian's clang-16 package) for the WMMA builtins"
  [ "$status" -eq 0 ] && exit 77
  exit "$status"
fi
expect matmul-wmma "$clang16" gfx1100 "$matmul" 'v_wmma_f32_16x16x16_f16' $((28 * 4 * (4 + 8)))
expect attention-wmma "$clang16" gfx1100 "$attn" 'v_wmma_f32_16x16x16_f16' $((4 * (4 + 8) + 2 * 2 * (4 + 8)))
exit "$status"
