# bench-download: loopback download throughput of the library's downloader vs curl on the same
# file from the same local server (download_bench.cpp; needs python3 for the server).
add_executable(bench-download ${CMAKE_CURRENT_LIST_DIR}/download_bench.cpp
                              ${PROJECT_SOURCE_DIR}/tests/library/test_hub.cpp)
target_include_directories(bench-download PRIVATE ${PROJECT_SOURCE_DIR}/tests/library)
target_link_libraries(bench-download PRIVATE tandem-library tandem-test-support tandem-warnings)
