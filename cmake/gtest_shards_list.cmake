# Run after a test binary links (cmake/gtest_shards.cmake): lists its tests
# and writes OUTPUT, one add_test per suite or per shard of a suite.
# -D BINARY=... -D ARGS_FILE=... -D OUTPUT=...
include(${ARGS_FILE})
# The whole list, whatever the building shell's environment selects.
foreach(var GTEST_FILTER GTEST_TOTAL_SHARDS GTEST_SHARD_INDEX
            GTEST_ALSO_RUN_DISABLED_TESTS)
  unset(ENV{${var}})
endforeach()
execute_process(COMMAND ${BINARY} --gtest_list_tests
                WORKING_DIRECTORY ${WORKING_DIRECTORY}
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors
                RESULT_VARIABLE status TIMEOUT 120)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests failed (${status}):\n"
                      "${listing}${errors}")
endif()

# Lines: "Suite." (a value-parameterized suite "Prefix/Suite.", a typed one
# followed by "  # TypeParam = ...") and "  Test" under it.
# Parameter comments ("  # GetParam() = ...") may hold [ ] ; \\ that
# would merge list items; names never do.
string(REGEX REPLACE "  #[^\n]*" "" listing "${listing}")
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites)
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")
    set(suite ${CMAKE_MATCH_1})
    list(APPEND suites ${suite})
    set(count_${suite} 0)
  elseif(line MATCHES "^  ([^ ]+)" AND DEFINED suite)
    # GoogleTest skips (and does not count for sharding) a disabled test:
    # suite or test name matching DISABLED_* or */DISABLED_*.
    set(test "${CMAKE_MATCH_1}")
    if(NOT suite MATCHES "(^|/)DISABLED_" AND NOT test MATCHES "(^|/)DISABLED_")
      math(EXPR count_${suite} "${count_${suite}} + 1")
    endif()
  endif()
endforeach()
if(NOT suites)
  message(FATAL_ERROR "${BINARY} listed no tests:\n${listing}")
endif()

set(text "# Written by cmake/gtest_shards_list.cmake from ${BINARY}.\n")
set(total 0)
set(processes 0)
foreach(suite IN LISTS suites)
  set(count ${count_${suite}})
  if(count EQUAL 0)
    continue()
  endif()
  math(EXPR total "${total} + ${count}")
  math(EXPR shards "(${count} + ${PER} - 1) / ${PER}")
  math(EXPR last "${shards} - 1")
  foreach(shard RANGE ${last})
    math(EXPR processes "${processes} + 1")
    if(shards EQUAL 1)
      set(name "${suite}")
      set(env ${ENVIRONMENT})
    else()
      math(EXPR number "${shard} + 1")
      set(name "${suite}[${number}/${shards}]")
      set(env ${ENVIRONMENT} GTEST_TOTAL_SHARDS=${shards}
              GTEST_SHARD_INDEX=${shard})
    endif()
    string(APPEND text
      "add_test([==[${name}]==] [==[${BINARY}]==] "
      "[==[--gtest_filter=${suite}.*]==])\n"
      "set_tests_properties([==[${name}]==] PROPERTIES"
      " WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==]"
      " TIMEOUT ${TIMEOUT}"
      " ENVIRONMENT [==[${env}]==]")
    if(LABELS)
      string(APPEND text " LABELS [==[${LABELS}]==]")
    endif()
    string(APPEND text ")\n")
  endforeach()
endforeach()
# Written only when it changed, so that ctest's cost data stays keyed.
set(new ${OUTPUT}.new)
file(WRITE ${new} "${text}")
file(COPY_FILE ${new} ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${new})
message(STATUS "${BINARY}: ${total} tests in ${processes} CTest processes")
