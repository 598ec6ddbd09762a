# bench-cluster: all-reduce latency per message size over loopback TCP, plain and with a
# simulated one-way delay (cluster_allreduce_bench.cpp).
add_executable(bench-cluster ${CMAKE_CURRENT_LIST_DIR}/cluster_allreduce_bench.cpp)
target_link_libraries(bench-cluster PRIVATE tandem-net benchmark::benchmark tandem-warnings)
