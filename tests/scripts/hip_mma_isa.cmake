# The HIP backend's matrix-unit prefill compiles to MFMA on gfx90a (Debian's hipcc) and to WMMA
# on gfx1100 (clang 16+: Debian's clang-16); gfx1030 gets none (hip_mma_isa_check.sh).
if(TARGET tandem-backend-hip AND TANDEM_HIP_PLATFORM STREQUAL "amd")
  find_program(TANDEM_CLANG_WMMA NAMES clang++-19 clang++-18 clang++-17 clang++-16)
  add_test(NAME hip.mma-isa
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/hip_mma_isa_check.sh ${PROJECT_SOURCE_DIR}
            ${TANDEM_HIP_COMPILER} ${TANDEM_CLANG_WMMA})
  set_tests_properties(hip.mma-isa PROPERTIES LABELS "backend" SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
