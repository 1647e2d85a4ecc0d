# `cmake --install BUILD [--prefix DIR]`: the static libraries, the public headers, the CLI and a
# CMake package, so that another project does
#   find_package(memplan CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE memplan::memplan)
# test/consumer/ is such a project; tools/test.sh builds it against an installed copy.
include(CMakePackageConfigHelpers)

set(MEMPLAN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/memplan)

install(TARGETS memplan memplan_plan_core memplan_plan_proto EXPORT memplanTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS memplan_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Only include/memplan/: the headers under lib/ are private (memplan.h includes nothing else of ours
# but memplan/error.h).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/memplan DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(EXPORT memplanTargets NAMESPACE memplan:: FILE memplanTargets.cmake
  DESTINATION ${MEMPLAN_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/memplanConfig.cmake.in
  ${PROJECT_BINARY_DIR}/memplanConfig.cmake INSTALL_DESTINATION ${MEMPLAN_INSTALL_CMAKEDIR})
# 0.x: a new minor version may change the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/memplanConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/memplanConfig.cmake ${PROJECT_BINARY_DIR}/memplanConfigVersion.cmake
  DESTINATION ${MEMPLAN_INSTALL_CMAKEDIR})
