# CLI contract of `tandem-cli render-template` (tests/template/cli_check.py): every fixture
# rendering byte for byte through --template-file, the model's template and special tokens through
# -m (GGUF files written by the PyPI gguf package), clear errors on bad input.
if(EXISTS "${TANDEM_PYTHON}" AND TARGET tandem-cli)
  add_test(NAME template.cli_contract
           COMMAND ${TANDEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/template/cli_check.py
                   --cli $<TARGET_FILE:tandem-cli> --fixtures ${TANDEM_FIXTURES_DEFAULT}
                   --work ${CMAKE_CURRENT_BINARY_DIR}/template-cli)
  set_tests_properties(template.cli_contract PROPERTIES LABELS "fast;formats;cli" SKIP_RETURN_CODE 77
                       TIMEOUT 300)
endif()
