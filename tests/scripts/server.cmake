# tandem-cli serve against the real OpenAI Python client (PyPI openai) with the default model
# ($TANDEM_DEFAULT_MODEL, set by packaging/test.sh); skipped (exit 77) when the model is absent.
add_test(NAME server.openai_client
  COMMAND ${TANDEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/server_openai_check.py
          --cli $<TARGET_FILE:tandem-cli>)
set_tests_properties(server.openai_client PROPERTIES LABELS "server" TIMEOUT 900
                     SKIP_RETURN_CODE 77)
