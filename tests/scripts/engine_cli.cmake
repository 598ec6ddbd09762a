# Engine CLI contract (synth, bench, eval, generate, error paths), checked with the PyPI gguf and
# numpy packages.
add_test(NAME engine.cli
  COMMAND ${TANDEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/engine_cli_check.py
          --cli $<TARGET_FILE:tandem-cli> --out-dir ${CMAKE_CURRENT_BINARY_DIR}/engine-cli-out)
set_tests_properties(engine.cli PROPERTIES LABELS "engine" TIMEOUT 600)
