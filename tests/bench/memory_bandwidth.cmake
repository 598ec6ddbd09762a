# bench-memory-bandwidth: STREAM-like read/copy/triad GB/s of this machine, the ceiling decode
# speed is held against (memory_bandwidth_bench.cpp; no Google Benchmark needed).
add_executable(bench-memory-bandwidth ${CMAKE_CURRENT_LIST_DIR}/memory_bandwidth_bench.cpp)
target_link_libraries(bench-memory-bandwidth PRIVATE Threads::Threads tandem-warnings)
