# tandem-cli quantize / convert --type q* / list FIT column (tests/scripts/quantize_cli_check.py,
# checked with the PyPI gguf package's reader).
if(EXISTS "${TANDEM_PYTHON}" AND TARGET tandem-cli)
  add_test(NAME quantize.cli_contract
    COMMAND ${TANDEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/quantize_cli_check.py
            --cli $<TARGET_FILE:tandem-cli> --fixtures ${TANDEM_FIXTURES_DEFAULT}
            --out-dir ${CMAKE_CURRENT_BINARY_DIR}/quantize-cli-out)
  set_tests_properties(quantize.cli_contract PROPERTIES LABELS "quantize;cli" SKIP_RETURN_CODE 77 TIMEOUT 300)
endif()
