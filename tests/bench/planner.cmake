# bench-planner: the memory plan against what the CPU and Vulkan backends allocate for real-size
# synth models (1B, 8B), scratch peak as % of weights, planning time (planner_bench.cpp).
add_executable(bench-planner ${CMAKE_CURRENT_LIST_DIR}/planner_bench.cpp)
target_link_libraries(bench-planner PRIVATE tandem-core tandem-warnings)
