# The store's crash test (label "store", not "fast"): a writer process killed with SIGKILL at
# random moments, 200 times; sources in tests/store/crash/ (kept out of test-store's glob).
add_executable(store-crash-writer ${CMAKE_CURRENT_SOURCE_DIR}/store/crash/crash_writer.cpp)
target_link_libraries(store-crash-writer PRIVATE tandem-store tandem-warnings)

add_executable(test-store-crash ${CMAKE_CURRENT_SOURCE_DIR}/store/crash/crash_test.cpp)
target_link_libraries(test-store-crash PRIVATE tandem-store tandem-test-support GTest::gtest_main
                      tandem-warnings)
add_dependencies(test-store-crash store-crash-writer)
add_test(NAME store.crash_sigkill COMMAND test-store-crash)
set_tests_properties(store.crash_sigkill PROPERTIES LABELS store TIMEOUT 120)
