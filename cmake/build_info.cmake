# Writes build_info.h (version and git revision) at build time, so a
# rebuild after a commit records the new revision; run by the
# asyncrl_build_info target as
#   cmake -DSOURCE_DIR=... -DINPUT=... -DOUTPUT=... -DVERSION=... -P build_info.cmake
# configure_file leaves OUTPUT untouched when its text would not change, so
# an unchanged revision recompiles nothing. A tree with uncommitted changes
# to tracked files gets "-dirty" after the revision.
execute_process(COMMAND git rev-parse --short HEAD
                WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE ASYNCRL_REVISION
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT ASYNCRL_REVISION)
  set(ASYNCRL_REVISION "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE changes
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changes)
    string(APPEND ASYNCRL_REVISION "-dirty")
  endif()
endif()
set(PROJECT_VERSION ${VERSION})
configure_file(${INPUT} ${OUTPUT} @ONLY)
