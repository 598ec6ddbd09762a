# tandem-cli search/pull/list/rm against the local hub stand-in (tests/library/hf_test_server.py).
if(EXISTS "${TANDEM_PYTHON}" AND TARGET tandem-cli)
  add_test(NAME library.cli_contract
           COMMAND ${TANDEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/library/cli_contract.py
                   $<TARGET_FILE:tandem-cli>)
  set_tests_properties(library.cli_contract PROPERTIES LABELS "library;cli" TIMEOUT 120)
endif()
