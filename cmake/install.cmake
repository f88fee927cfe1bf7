# `cmake --install build --prefix P`: the libraries, the public headers under
# P/include/asyncrl/ and the CMake package asyncrl (asyncrlConfig.cmake, its
# version file and the exported targets asyncrl::asyncrl and one per layer).
include(CMakePackageConfigHelpers)

set(ASYNCRL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/asyncrl)

install(TARGETS asyncrl asyncrl_experiments asyncrl_agents asyncrl_envs
                asyncrl_misc asyncrl_proto
        EXPORT asyncrlTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(layer ${ASYNCRL_LAYERS})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/${layer}/
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/asyncrl/${layer}
          FILES_MATCHING PATTERN "*.h")
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
