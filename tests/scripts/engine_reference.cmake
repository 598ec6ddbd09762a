# tandem-cli eval/generate on every hf-tiny fixture against the transformers fixture and a float64
# numpy implementation of the Hugging Face model code (tests/scripts/engine_reference.py says why
# both). Labels: engine.
set(_engine_models llama-tiny qwen2-tiny qwen3-tiny qwen3moe-tiny gemma3-tiny)
foreach(_m IN LISTS _engine_models)
  add_test(NAME engine.reference.${_m}
    COMMAND ${TANDEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/engine_reference.py
            --cli $<TARGET_FILE:tandem-cli> --model ${TANDEM_FIXTURES_DEFAULT}/hf-tiny/${_m}
            --out-dir ${CMAKE_CURRENT_BINARY_DIR}/engine-reference-out)
  set_tests_properties(engine.reference.${_m} PROPERTIES LABELS "engine" SKIP_RETURN_CODE 77 TIMEOUT 600)
endforeach()
