# bench-cluster: all-reduce latency per message size over loopback TCP, plain and with a
# simulated one-way delay (cluster_allreduce_bench.cpp).
add_executable(bench-cluster ${CMAKE_CURRENT_LIST_DIR}/cluster_allreduce_bench.cpp)
target_link_libraries(bench-cluster PRIVATE tandem-net benchmark::benchmark tandem-warnings)

# bench-cluster-net: transport round trip and all-reduce (direct vs ring, fp32/bf16) between
# processes; tests/bench/cluster_netns.sh runs it over loopback and a veth pair.
add_executable(bench-cluster-net ${CMAKE_CURRENT_LIST_DIR}/cluster_net_bench.cpp)
target_link_libraries(bench-cluster-net PRIVATE tandem-net tandem-warnings)
