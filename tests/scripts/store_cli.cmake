# CLI contract of `tandem-cli chats`: a hand-written export (tests/store/data/sample_export.json)
# is imported into a fresh database, then listed, shown, searched and exported; the JSON export
# re-imported into a second database exports byte-identically; the Markdown export equals the
# hand-written expectation; bad files give clear errors.
if(NOT TARGET tandem-cli)
  return()
endif()

set(_data ${CMAKE_CURRENT_SOURCE_DIR}/store/data)
set(_dir ${CMAKE_CURRENT_BINARY_DIR}/store-cli)
set(_cli $<TARGET_FILE:tandem-cli>)

function(store_cli_test name)
  cmake_parse_arguments(T "" "PASS;FAIL;SETUP;REQUIRES" "COMMAND" ${ARGN})
  add_test(NAME store.cli.${name} COMMAND ${T_COMMAND})
  set_tests_properties(store.cli.${name} PROPERTIES LABELS "fast;store" TIMEOUT 60)
  if(T_PASS)
    set_tests_properties(store.cli.${name} PROPERTIES PASS_REGULAR_EXPRESSION "${T_PASS}")
  endif()
  if(T_FAIL)
    set_tests_properties(store.cli.${name} PROPERTIES FAIL_REGULAR_EXPRESSION "${T_FAIL}")
  endif()
  if(T_SETUP)
    set_tests_properties(store.cli.${name} PROPERTIES FIXTURES_SETUP "${T_SETUP}")
  endif()
  if(T_REQUIRES)
    set_tests_properties(store.cli.${name} PROPERTIES FIXTURES_REQUIRED "${T_REQUIRES}")
  endif()
endfunction()

store_cli_test(clean SETUP store_cli_clean
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${_dir})
store_cli_test(import REQUIRES store_cli_clean SETUP store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db import ${_data}/sample_export.json
  PASS "imported 2 conversation\\(s\\) into [^\n]*a.db: 1 2")
store_cli_test(list REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db list
  PASS "     1  20[0-9-]+ [0-9:]+  pinned       5 msg  Sourdough starter" FAIL "Old archived chat")
store_cli_test(list_archived REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db list --archived
  PASS "     2  20[0-9-]+ [0-9:]+  archived     2 msg  Old archived chat")
store_cli_test(list_json REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db list --json
  PASS "\"title\": \"Sourdough starter\"")
store_cli_test(show REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db show 1
  PASS "--- assistant #3 \\(branch 2 of 2\\) · llama-3.2-3b-instruct · 18 tokens · 36.2 tokens/s\nFeed it [*][*]every 12 hours[*][*]"
  FAIL "Once a day")
store_cli_test(show_interrupted REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db show 1
  PASS "--- assistant #5 · llama-3.2-3b-instruct · 7 tokens · 35.0 tokens/s · interrupted\nWhole rye ferments fastest; unbleached")
store_cli_test(show_all REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db show 1 --all
  PASS "  --- assistant #2 \\(branch 1 of 2\\)[^\n]*\n  Once a day[.]")
store_cli_test(show_unknown REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db show 99
  PASS "error: store: [^\n]*a.db: no conversation with id 99")
store_cli_test(search_all_words REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db search bavarian pizza
  PASS "no matches for 'bavarian pizza'")
store_cli_test(search_diacritics REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db search gruß
  PASS "2/6  Old archived chat  \\[user\\]  Translate '\\[grüß\\] Gott'")
store_cli_test(search_prefix REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db search ferment*
  PASS "1/5  Sourdough starter  \\[assistant\\]  Whole rye \\[ferments\\] fastest; unbleached")

# JSON round trip through a second database, then byte-for-byte comparison of the exports.
store_cli_test(export_json REQUIRES store_cli_db SETUP store_cli_exported
  COMMAND ${_cli} chats --db ${_dir}/a.db export -o ${_dir}/a.json
  PASS "wrote [^\n]*a.json")
store_cli_test(reimport REQUIRES store_cli_exported SETUP store_cli_db_b
  COMMAND ${_cli} chats --db ${_dir}/b.db import ${_dir}/a.json
  PASS "imported 2 conversation")
store_cli_test(export_json_again REQUIRES store_cli_db_b SETUP store_cli_exported_b
  COMMAND ${_cli} chats --db ${_dir}/b.db export -f json -o ${_dir}/b.json)
store_cli_test(round_trip_identical REQUIRES store_cli_exported_b
  COMMAND ${CMAKE_COMMAND} -E compare_files ${_dir}/a.json ${_dir}/b.json)
store_cli_test(export_md REQUIRES store_cli_db SETUP store_cli_md
  COMMAND ${_cli} chats --db ${_dir}/a.db export 1 -f md -o ${_dir}/1.md)
store_cli_test(markdown_as_expected REQUIRES store_cli_md
  COMMAND ${CMAKE_COMMAND} -E compare_files ${_dir}/1.md ${_data}/sample_export_10.md)

# Bad input: clear errors, exit status 1.
store_cli_test(not_a_database
  COMMAND ${_cli} chats --db ${_data}/schema_v1.sql list
  PASS "error: store: [^\n]*schema_v1.sql: not a SQLite database")
store_cli_test(newer_database
  COMMAND ${_cli} chats --db ${_data}/newer_version.db list
  PASS "error: store: [^\n]*newer_version.db: written by a newer Tandem \\(schema version 99")
store_cli_test(foreign_database
  COMMAND ${_cli} chats --db ${_data}/foreign_app.db search x
  PASS "error: store: [^\n]*foreign_app.db: a SQLite database of another application")
store_cli_test(import_not_json REQUIRES store_cli_db
  COMMAND ${_cli} chats --db ${_dir}/a.db import ${_data}/foreign_app.sql
  PASS "error: chats import: [^\n]*foreign_app.sql: not valid JSON")
store_cli_test(missing_database REQUIRES store_cli_clean
  COMMAND ${_cli} chats --db ${_dir}/none.db list
  PASS "error: store: [^\n]*none.db: no chat store there")
