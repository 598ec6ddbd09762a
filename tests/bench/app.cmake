# bench-app: the desktop app's start-up time (the real binary, to an interactive window) and the
# longest UI-thread stall (event-loop lateness of a 5 ms heartbeat) while a model loads and
# generates (app_responsiveness_bench.cpp).
if(TARGET tandem-ui)
  add_executable(bench-app ${CMAKE_CURRENT_LIST_DIR}/app_responsiveness_bench.cpp)
  set_target_properties(bench-app PROPERTIES AUTOMOC ON)
  target_link_libraries(bench-app PRIVATE tandem-ui tandem-warnings)
  target_compile_definitions(bench-app PRIVATE TANDEM_APP_BIN="$<TARGET_FILE:tandem>")
  add_dependencies(bench-app tandem)
endif()
