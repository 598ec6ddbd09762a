# bench-cluster-decode: decode tok/s of one process vs a coordinator + tandem-node workers over
# loopback TCP (plain and with simulated one-way delay), the time/token model checked against
# them, its prediction for Strix-Halo-class nodes, and the all-reduce cost of encryption
# (cluster_decode_bench.cpp).
add_executable(bench-cluster-decode ${CMAKE_CURRENT_LIST_DIR}/cluster_decode_bench.cpp)
target_link_libraries(bench-cluster-decode PRIVATE tandem-net tandem-core tandem-warnings)
add_dependencies(bench-cluster-decode tandem-node)
