# bench-quant: matvec / matmul throughput of the CPU weight kernels (quant_bench.cpp).
add_executable(bench-quant ${CMAKE_CURRENT_LIST_DIR}/quant_bench.cpp)
target_link_libraries(bench-quant PRIVATE tandem-quant benchmark::benchmark tandem-warnings)
