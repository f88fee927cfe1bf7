# `cmake --install build --prefix P`: the libraries, the public headers under
# P/include/asyncrl/ and the CMake package asyncrl (asyncrlConfig.cmake, its
# version file and the exported targets asyncrl::asyncrl and one per layer).
include(CMakePackageConfigHelpers)

set(ASYNCRL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/asyncrl)

# train_a3c too: the Python package's asyncrl.train starts it.
install(TARGETS train_a3c RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS asyncrl asyncrl_experiments asyncrl_agents asyncrl_envs
                asyncrl_misc asyncrl_proto
        EXPORT asyncrlTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The public headers: what a program built on the library includes (these
# entry points) and every project header they include, followed to the end.
# The others (the hosts' transport and coordinator, the command line's
# sources, the trainer's loop and region, the futex, the fast path's
# kernels...) are the library's own and are not installed, so a program
# cannot come to depend on them. tests/install/install_test.sh checks that
# the set is closed and that internal headers stay out.
set(ASYNCRL_PUBLIC_ENTRY_HEADERS
  experiments/run_trainer.h        # RunTrainer, TrainerPlugins
  experiments/train_agent_async.h  # TrainAgentAsync
  experiments/extension.h          # TrainerExtension, WorkerExtension
  experiments/evaluator.h          # Evaluate
  agents/a3c.h                     # A3C and its options
  agents/ppo.h                     # PPO and its options
  agents/actor_critic.h            # a new algorithm's parts
  agents/distributions.h
  agents/torch_setup.h
  envs/registry.h                  # a new environment
  envs/wrappers.h
  misc/checkpoint.h
  misc/logging.h
  misc/rng.h
  misc/timers.h
  misc/validate.h)

# OUT: HEADERS (paths under src/) and every header of the project they
# include, transitively. CMake configures again when one of them changes.
function(asyncrl_header_closure out)
  set(todo ${ARGN})
  set(done)
  while(todo)
    list(POP_FRONT todo header)
    set(path ${PROJECT_SOURCE_DIR}/src/${header})
    if(header IN_LIST done OR NOT EXISTS ${path})
      continue()  # Seen, or generated (installed below).
    endif()
    list(APPEND done ${header})
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
    file(STRINGS ${path} includes REGEX "^#include [<\"]asyncrl/")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include [<\"]asyncrl/([^\">]+)[\">].*" "\\1"
             included "${line}")
      list(APPEND todo ${included})
    endforeach()
  endwhile()
  set(${out} ${done} PARENT_SCOPE)
endfunction()

asyncrl_header_closure(public_headers ${ASYNCRL_PUBLIC_ENTRY_HEADERS})
foreach(header IN LISTS public_headers)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/src/${header}
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/asyncrl/${dir})
endforeach()
foreach(generated proto misc)
  install(DIRECTORY ${ASYNCRL_GENERATED_ROOT}/${generated}/asyncrl/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/asyncrl
          FILES_MATCHING PATTERN "*.h")
endforeach()

install(EXPORT asyncrlTargets NAMESPACE asyncrl::
        DESTINATION ${ASYNCRL_CMAKE_DIR})
configure_package_config_file(cmake/asyncrlConfig.cmake.in
  ${PROJECT_BINARY_DIR}/asyncrlConfig.cmake
  INSTALL_DESTINATION ${ASYNCRL_CMAKE_DIR})
# 0.x releases promise nothing across minor versions.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/asyncrlConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/asyncrlConfig.cmake
              ${PROJECT_BINARY_DIR}/asyncrlConfigVersion.cmake
        DESTINATION ${ASYNCRL_CMAKE_DIR})
