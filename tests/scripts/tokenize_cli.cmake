# CLI contract of `tandem-cli tokenize`: ids printed space-separated, checked against the fixture
# vectors (Hugging Face's ids in ../shared/fixtures/tokenizer/*.out) for a GGUF vocabulary, a
# SentencePiece one with BOS, a Hugging Face folder, --file with exact bytes and special-token
# parsing; bad arguments exit non-zero with a clear message.
if(NOT TARGET tandem-cli)
  return()
endif()

set(_tok_cli $<TARGET_FILE:tandem-cli>)
if(DEFINED ENV{TANDEM_FIXTURES})
  set(_tok_fixtures $ENV{TANDEM_FIXTURES}/tokenizer)
else()
  set(_tok_fixtures ${TANDEM_FIXTURES_DEFAULT}/tokenizer)
endif()
set(_tok_dir ${CMAKE_CURRENT_BINARY_DIR}/tokenize-cli)

function(tokenize_cli_test name)
  cmake_parse_arguments(T "" "PASS" "COMMAND" ${ARGN})
  add_test(NAME tokenizer.cli.${name} COMMAND ${T_COMMAND})
  set_tests_properties(tokenizer.cli.${name} PROPERTIES LABELS "fast;formats" TIMEOUT 60
                       PASS_REGULAR_EXPRESSION "${T_PASS}")
endfunction()

# The text of case INDEX of a .inp file and the ids of its .out line.
function(tokenize_fixture_case inp index out_text out_ids)
  file(READ ${inp} all)
  string(REPLACE ".inp" ".out" out_file ${inp})
  file(READ ${out_file} lines)
  set(sep "\n__ggml_vocab_test__\n")
  string(LENGTH "${sep}" sep_len)
  foreach(i RANGE ${index})
    string(FIND "${all}" "${sep}" at)
    string(SUBSTRING "${all}" 0 ${at} text)
    math(EXPR next "${at} + ${sep_len}")
    string(SUBSTRING "${all}" ${next} -1 all)
    string(FIND "${lines}" "\n" nl)
    string(SUBSTRING "${lines}" 0 ${nl} ids)
    math(EXPR nl "${nl} + 1")
    string(SUBSTRING "${lines}" ${nl} -1 lines)
  endforeach()
  string(STRIP "${ids}" ids)
  set(${out_text} "${text}" PARENT_SCOPE)
  set(${out_ids} "${ids}" PARENT_SCOPE)
endfunction()

if(NOT EXISTS ${_tok_fixtures}/gguf-vocab/ggml-vocab-gpt-2.gguf)
  add_test(NAME tokenizer.cli.fixtures_missing
           COMMAND ${CMAKE_COMMAND} -E echo "skipped: fixtures not found at ${_tok_fixtures}")
  set_tests_properties(tokenizer.cli.fixtures_missing PROPERTIES LABELS "fast;formats"
                       SKIP_REGULAR_EXPRESSION "skipped")
  return()
endif()

set(_gpt2 ${_tok_fixtures}/gguf-vocab/ggml-vocab-gpt-2.gguf)
set(_spm ${_tok_fixtures}/gguf-vocab/ggml-vocab-llama-spm.gguf)
set(_qwen2 ${_tok_fixtures}/hf-qwen2)

# Case 17: " Hello, world!" (GGUF, no BOS: --no-special).
tokenize_fixture_case(${_gpt2}.inp 17 _text _ids)
tokenize_cli_test(gguf_text COMMAND ${_tok_cli} tokenize -m ${_gpt2} --text "${_text}" --no-special
                  PASS "^${_ids}\n$")

# Case 12: " Hello world" with SentencePiece: BOS (1) first, as the vocabulary asks.
tokenize_fixture_case(${_spm}.inp 12 _text _ids)
tokenize_cli_test(spm_bos COMMAND ${_tok_cli} tokenize -m ${_spm} --text "${_text}"
                  PASS "^1 ${_ids}\n$")

# Case 28: "    Hello\n    Hello" from a file, through a Hugging Face folder.
tokenize_fixture_case(${_qwen2}/ggml-vocab-qwen2.gguf.inp 28 _text _ids)
file(WRITE ${_tok_dir}/case28.txt "${_text}")
tokenize_cli_test(hf_folder_file COMMAND ${_tok_cli} tokenize -m ${_qwen2} --file ${_tok_dir}/case28.txt
                  PASS "^${_ids}\n$")

# Case 23: "Hello", then <|im_end|> (151645 in tokenizer_config.json): parsed by default only.
tokenize_fixture_case(${_qwen2}/ggml-vocab-qwen2.gguf.inp 23 _text _ids)
tokenize_cli_test(special_parsed COMMAND ${_tok_cli} tokenize -m ${_qwen2} --text "${_text}<|im_end|>"
                  PASS "^${_ids} 151645\n$")
tokenize_cli_test(special_as_text
                  COMMAND ${_tok_cli} tokenize -m ${_qwen2} --text "${_text}<|im_end|>" --no-special
                  PASS "^${_ids} [0-9 ]+\n$")

tokenize_cli_test(missing_model COMMAND ${_tok_cli} tokenize -m ${_tok_dir}/absent.gguf --text x
                  PASS "error: tokenizer: [^\n]*absent.gguf: no such file")
tokenize_cli_test(missing_text COMMAND ${_tok_cli} tokenize -m ${_gpt2}
                  PASS "error: tokenize: give --text or --file")
tokenize_cli_test(missing_file COMMAND ${_tok_cli} tokenize -m ${_gpt2} --file ${_tok_dir}/absent.txt
                  PASS "error: tokenize: cannot read --file [^\n]*absent.txt")
