# Fuzz corpus replay, for every build (gcc or clang, fuzzing or not):
# each target's LLVMFuzzerTestOneInput runs over its committed corpus and
# its crash regressions as a plain program (replay_main.c), label unit.
# Included from tests/CMakeLists.txt and from tests/fuzz/CMakeLists.txt;
# the guard makes a second include a no-op.
include_guard(GLOBAL)

set(RI2N_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(RI2N_FUZZ_TARGETS fuzz_wire fuzz_conn fuzz_listen fuzz_dispatch fuzz_btl fuzz_crypt)

add_library(rn_fuzz_common STATIC ${RI2N_FUZZ_DIR}/fuzz_common.c ${RI2N_FUZZ_DIR}/fuzz_pair.c
  ${RI2N_FUZZ_DIR}/fuzz_drive.c)
target_link_libraries(rn_fuzz_common PUBLIC rn_core)
target_include_directories(rn_fuzz_common PUBLIC ${RI2N_FUZZ_DIR} ${PROJECT_SOURCE_DIR}/tools/kit)

foreach(t ${RI2N_FUZZ_TARGETS})
  string(REPLACE "fuzz_" "" short ${t})
  add_executable(fuzz_replay_${short} ${RI2N_FUZZ_DIR}/${t}.c ${RI2N_FUZZ_DIR}/replay_main.c)
  target_link_libraries(fuzz_replay_${short} PRIVATE rn_fuzz_common rn_host)
  if(t STREQUAL "fuzz_btl") # the BTL's parsers are pure code: no Open MPI needed
    target_sources(fuzz_replay_${short} PRIVATE ${RI2N_FUZZ_DIR}/../../btl_ri2n/btl_ri2n_wire.c)
    target_include_directories(fuzz_replay_${short} PRIVATE ${RI2N_FUZZ_DIR}/../../btl_ri2n)
  endif()
  add_test(NAME fuzz_replay_${short}
    COMMAND fuzz_replay_${short} ${RI2N_FUZZ_DIR}/corpus/${t} ${RI2N_FUZZ_DIR}/crashes/${t})
  set_tests_properties(fuzz_replay_${short} PROPERTIES LABELS unit TIMEOUT 300)
endforeach()

# The seed corpus generator; `cmake --build B --target fuzz-corpus` rewrites
# tests/fuzz/corpus/ (deterministic: the same core gives the same files).
add_executable(fuzz_gen_corpus ${RI2N_FUZZ_DIR}/gen_corpus.c)
target_link_libraries(fuzz_gen_corpus PRIVATE rn_fuzz_common)
add_custom_target(fuzz-corpus
  COMMAND fuzz_gen_corpus ${RI2N_FUZZ_DIR}/corpus
  DEPENDS fuzz_gen_corpus
  COMMENT "Writing the fuzz seed corpus into ${RI2N_FUZZ_DIR}/corpus")
