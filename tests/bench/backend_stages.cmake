# bench-backend-stages: what one dependent stage of a step costs on a backend (a chain of tiny
# nodes against independent ones), the floor that decode's ~9 stages per layer pay
# (backend_stages_bench.cpp; no Google Benchmark needed).
add_executable(bench-backend-stages ${CMAKE_CURRENT_LIST_DIR}/backend_stages_bench.cpp)
target_link_libraries(bench-backend-stages PRIVATE tandem-core tandem-warnings)
