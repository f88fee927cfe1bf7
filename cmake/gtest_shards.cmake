# asyncrl_add_gtest_shards(TARGET [PER N] [TIMEOUT S] [LABELS L...]
#                          [ENVIRONMENT VAR=VALUE...])
#
# Registers TARGET's GoogleTest tests with CTest one process per test suite,
# a suite of more than PER tests (default 8) as several processes (GoogleTest's
# sharding: shard i of n runs every n-th test of the suite), instead of
# gtest_discover_tests' one process per test. Every binary of this project
# links LibTorch, whose start (its operator registry, the loader's relocations)
# costs ~1 s of CPU a process: with ~870 tests that was about half of the
# default ctest run and of each numeric-kernel pass (docs/ci/README.md). The
# same grouping as scripts/gtest_suites.sh (the sanitizer stage).
#
# CTest names: "Suite" for a suite in one process, "Suite[i/n]" for shard i
# of n (GoogleTest prints the name of every test it runs and of each failed
# one, which --output-on-failure shows). One test by hand:
# build/tests/TARGET --gtest_filter=Suite.Name.
#
# The list is taken from the built binary (--gtest_list_tests) after each
# link, as gtest_discover_tests does, so a test added to a file needs no
# CMake change.
function(asyncrl_add_gtest_shards target)
  cmake_parse_arguments(arg "" "PER;TIMEOUT" "LABELS;ENVIRONMENT" ${ARGN})
  if(NOT arg_PER)
    set(arg_PER 8)
  endif()
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR})
  set(tests_file ${dir}/${target}_shards.cmake)
  set(include_file ${dir}/${target}_shards_include.cmake)
  # Arguments for the script, one per line (lists and '=' survive).
  set(args_file ${dir}/${target}_shards_args.cmake)
  set(args_text
    "set(PER [==[${arg_PER}]==])\n"
    "set(TIMEOUT [==[${arg_TIMEOUT}]==])\n"
    "set(LABELS [==[${arg_LABELS}]==])\n"
    "set(ENVIRONMENT [==[${arg_ENVIRONMENT}]==])\n"
    "set(WORKING_DIRECTORY [==[${dir}]==])\n")
  string(CONCAT args_text ${args_text})
  file(WRITE ${args_file} "${args_text}")
  # The settings' and the script's hash is on the command line, so that a
  # change to either lists the tests again (Ninja re-runs a changed command).
  set(script ${PROJECT_SOURCE_DIR}/cmake/gtest_shards_list.cmake)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${script})
  file(SHA1 ${script} script_hash)
  string(SHA1 settings_hash "${args_text}${script_hash}")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D BINARY=$<TARGET_FILE:${target}>
            -D ARGS_FILE=${args_file} -D OUTPUT=${tests_file}
            -D SETTINGS=${settings_hash} -P ${script}
    BYPRODUCTS ${tests_file}
    COMMENT "Listing ${target}'s tests for CTest (one process per suite)"
    VERBATIM)
  # Until the binary is built, one test (with the labels, so that ctest -L
  # finds it) that fails and says so.
  set(not_built "add_test([==[${target}_NOT_BUILT]==] [==[${target}_NOT_BUILT]==])\n")
  if(arg_LABELS)
    string(APPEND not_built "  set_tests_properties([==[${target}_NOT_BUILT]==]"
           " PROPERTIES LABELS [==[${arg_LABELS}]==])\n")
  endif()
  file(WRITE ${include_file}
    "if(EXISTS [==[${tests_file}]==])\n"
    "  include([==[${tests_file}]==])\n"
    "else()\n"
    "  ${not_built}"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
