# The default real model against llama.cpp's committed outputs (tests/engine/data/llamacpp):
# greedy continuation (first 32 tokens) and perplexity within 1%. Skipped (77) without
# $TANDEM_DEFAULT_MODEL. Labels: engine.
foreach(_part greedy perplexity)
  add_test(NAME engine.llamacpp.${_part}
    COMMAND ${TANDEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/llamacpp_reference_check.py
            --cli $<TARGET_FILE:tandem-cli> --only ${_part})
  set_tests_properties(engine.llamacpp.${_part} PROPERTIES LABELS "engine" SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()
