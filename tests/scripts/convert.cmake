# tandem-cli convert on every hf-tiny fixture, checked by tests/scripts/convert_check.py with the
# PyPI safetensors + gguf + numpy packages (independent of our reader and writer).
set(_convert_models llama-tiny qwen2-tiny qwen3-tiny qwen3moe-tiny gemma3-tiny)
foreach(_m IN LISTS _convert_models)
  foreach(_t f32 f16 bf16)
    add_test(NAME convert.${_m}.${_t}
      COMMAND ${TANDEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/convert_check.py
              --cli $<TARGET_FILE:tandem-cli> --model ${TANDEM_FIXTURES_DEFAULT}/hf-tiny/${_m}
              --type ${_t} --out-dir ${CMAKE_CURRENT_BINARY_DIR}/convert-out)
    set_tests_properties(convert.${_m}.${_t} PROPERTIES LABELS "formats" SKIP_RETURN_CODE 77 TIMEOUT 300)
  endforeach()
endforeach()

# GGUF -> GGUF (dequantizing q8_0/q4_0 written by the gguf package; f16/bf16 rounding) and inspect.
add_test(NAME convert.gguf-retype
  COMMAND ${TANDEM_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/convert_gguf_check.py
          --cli $<TARGET_FILE:tandem-cli> --out-dir ${CMAKE_CURRENT_BINARY_DIR}/convert-gguf-out)
set_tests_properties(convert.gguf-retype PROPERTIES LABELS "formats" TIMEOUT 300)

# CLI contract: bad input is one clear error line and exit code 1, never a crash.
add_test(NAME convert.cli-missing-source
  COMMAND tandem-cli convert ${CMAKE_CURRENT_BINARY_DIR}/no-such-model -o ${CMAKE_CURRENT_BINARY_DIR}/x.gguf)
set_tests_properties(convert.cli-missing-source PROPERTIES LABELS "formats"
  PASS_REGULAR_EXPRESSION "error: convert: .*no-such-model does not exist")
add_test(NAME inspect.cli-not-gguf
  COMMAND tandem-cli inspect ${CMAKE_CURRENT_SOURCE_DIR}/CMakeLists.txt)
set_tests_properties(inspect.cli-not-gguf PROPERTIES LABELS "formats"
  PASS_REGULAR_EXPRESSION "error: gguf: .*CMakeLists.txt: not a GGUF file \\(bad magic\\)")
