# bench-quantize-model: model quantizer speed (MB/s) and peak RSS per file type on a 1B synth model,
# optionally side by side with llama-quantize (quantize_model_bench.cpp).
add_executable(bench-quantize-model ${CMAKE_CURRENT_LIST_DIR}/quantize_model_bench.cpp)
target_link_libraries(bench-quantize-model PRIVATE tandem-hf tandem-engine tandem-warnings)
