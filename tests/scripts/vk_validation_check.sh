#!/usr/bin/env bash
# Runs the op suite's Vulkan cases (test-backend-ops, cpu as the reference) under the Khronos
# validation layer with synchronisation validation and fails on any message it prints (it logs
# to stdout when the application registers no callback) or on a failing case. The loader's own
# log proves the layer was inserted, so a missing layer cannot pass as a clean run.
# Usage: vk_validation_check.sh TEST_BACKEND_OPS PLUGIN_DIR
# TANDEM_VK_VALIDATION_ENABLES replaces the layer's enables (VK_LAYER_ENABLES) for other checks.
set -uo pipefail
ops="$1" plugins="$2"
layer_json=""
for d in /usr/share/vulkan/explicit_layer.d /usr/local/share/vulkan/explicit_layer.d \
    /etc/vulkan/explicit_layer.d; do
    [ -f "$d/VkLayer_khronos_validation.json" ] && layer_json="$d/VkLayer_khronos_validation.json"
done
if [ -z "$layer_json" ]; then
    echo "SKIP: the Khronos validation layer is not installed (Debian: vulkan-validationlayers)"
    exit 77
fi
out=$(mktemp) && trap 'rm -f "$out"' EXIT
inserted='Insert instance layer "VK_LAYER_KHRONOS_validation"'
VK_LOADER_DEBUG=layer VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation \
    VK_LAYER_ENABLES=${TANDEM_VK_VALIDATION_ENABLES:-VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT} \
    TANDEM_TEST_BACKENDS=cpu,vulkan TANDEM_PLUGIN_DIR="$plugins" \
    "$ops" --gtest_filter='*vulkan*' >"$out" 2>&1
rc=$?
if ! grep -qE "^\[  PASSED  \] [1-9]" "$out" && ! grep -qE "^\[  FAILED  \]" "$out"; then
    echo "SKIP: no Vulkan case ran (no Vulkan device?)"
    tail -5 "$out"
    exit 77
fi
if ! grep -qF "$inserted" "$out"; then
    echo "FAIL: the loader did not insert the validation layer"
    tail -20 "$out"
    exit 1
fi
msgs=$(grep -E "Validation (Error|Warning)|VUID-|SYNC-HAZARD|UNASSIGNED-" "$out" | sort | uniq -c)
grep -E "^\[  (PASSED|FAILED) " "$out"
if [ -n "$msgs" ]; then
    echo "FAIL: validation messages:"
    echo "$msgs" | head -40
    exit 1
fi
if [ $rc -ne 0 ]; then
    echo "FAIL: test-backend-ops exited $rc"
    grep -E "Failure|FAILED" "$out" | head -20
    exit 1
fi
echo "vulkan.validation: no validation message"
