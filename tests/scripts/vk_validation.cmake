# The op suite's Vulkan cases under the Khronos validation layer with synchronisation validation
# (a missing or wrong barrier is a SYNC-HAZARD message): any validation message fails the test
# (vk_validation_check.sh). Skipped with a message where the layer is not installed.
if(TARGET tandem-backend-vulkan AND TARGET test-backend-ops)
  add_test(NAME vulkan.validation
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/scripts/vk_validation_check.sh
            $<TARGET_FILE:test-backend-ops> ${CMAKE_BINARY_DIR}/bin)
  set_tests_properties(vulkan.validation PROPERTIES LABELS "backend" SKIP_RETURN_CODE 77
                       TIMEOUT 900)
endif()
