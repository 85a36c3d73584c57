# What `cmake --install` puts where, and the Debian package CPack makes of it (`cpack -G DEB` in the
# build folder; deploy/package-check.sh installs that package in a fresh Debian 12 and runs it).
#
#   bin/                      rths-numerical, rths-physical (beside it: loopback starts it from
#                             there), rths-relay, rths-target, rths-study, rths-plan,
#                             rths-bench-loop, rths-console
#   share/rths/console/       the console's page, and uPlot (MIT licence beside it) as npm installed it
#   share/rths/examples/      the example configs and studies, and data/ (ground motions, maRTHS
#                             matrices) inside it: the examples name their records relative to
#                             their own folder (../data/...), so the folder works wherever it is
#                             installed or copied
#   share/rths/proto/         the schemas of the experiment files, of the results (JSON) and of the
#                             packets, each field documented: what a user reads configs and results by
#   share/doc/rths/           README.md, docs/, LICENSE and Debian's copyright file
include(GNUInstallDirs)

# The user tools; rths-bench-loop measures a host's wake-up lateness before a real-time test
# (rths-relay --spin-us refers to it).
foreach(tool IN ITEMS rths-numerical rths-physical rths-relay rths-target rths-study rths-plan rths-bench-loop
                     rths-console)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

# rths-console finds its page in ../share/rths/console from its own folder.
install(FILES ${PROJECT_SOURCE_DIR}/console/web/index.html ${PROJECT_SOURCE_DIR}/console/web/charts.js
              ${PROJECT_SOURCE_DIR}/console/web/console.js
              ${PROJECT_SOURCE_DIR}/console/web/console.css DESTINATION ${CMAKE_INSTALL_DATADIR}/rths/console)
install(FILES ${PROJECT_SOURCE_DIR}/console/web/node_modules/uplot/dist/uPlot.iife.min.js
              ${PROJECT_SOURCE_DIR}/console/web/node_modules/uplot/dist/uPlot.min.css
              ${PROJECT_SOURCE_DIR}/console/web/node_modules/uplot/LICENSE
        DESTINATION ${CMAKE_INSTALL_DATADIR}/rths/console/node_modules/uplot/dist OPTIONAL)

# Calibration files are written beside an RLS example by `rths-numerical calibrate`: results of a
# run on this machine, not part of the examples.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/rths/examples
        PATTERN "*.calibration.textproto" EXCLUDE PATTERN ".gitattributes" EXCLUDE)
# The schemas document every config and results field with its unit (docs/results.md, "The run folder"), and any
# protobuf library reads the results into typed messages with them.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/proto/ DESTINATION ${CMAKE_INSTALL_DATADIR}/rths/proto
        FILES_MATCHING PATTERN "*.proto")
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
# Debian policy 12.5: the licence of a package is /usr/share/doc/<package>/copyright.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)

# ---- the Debian package -------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rths)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "rths maintainers")
# A lab or distribution that rebuilds the package names itself here (-DRTHS_PACKAGE_MAINTAINER=...).
set(RTHS_PACKAGE_MAINTAINER "rths maintainers <maintainers@users.noreply.a-seed-adcb2a87.example>"
    CACHE STRING "Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${RTHS_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed real-time hybrid simulation middleware")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# rths_0.1.0_amd64.deb: Debian's name for the package file.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Debian's long description (CPack puts the summary above it as the synopsis, indents every line
# and turns the empty line into the paragraph separator " .").
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "rths couples a numerical substructure integrated in software with physical
substructures (specimens under actuators, possibly in other labs) over UDP at
1024 Hz, with a modified Smith predictor at both ends that takes the network
delay out of the loop. The same node code runs in virtual time (parameter
studies, tests), on one machine over loopback, and across sites.

This package holds the numerical node (rths-numerical), the physical site
(rths-physical), the impairment relay (rths-relay), the emulator of a lab's
real-time target (rths-target), the study runner (rths-study), the real-time
loop benchmark (rths-bench-loop), the operator's web console (rths-console,
with its page and uPlot in /usr/share/rths/console), the example
experiments with their ground motions in /usr/share/rths/examples, and the
documentation.")
# Runtime dependencies from the libraries the executables link (dpkg-shlibdeps, in dpkg-dev):
# libprotobuf, libspdlog, libfmt, libsodium, libstdc++ and libc with the versions they were built against.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# rths-study draws its plots with gnuplot and writes the scripts without it.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS gnuplot-nox)
find_program(RTHS_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NOT RTHS_DPKG_SHLIBDEPS)
  message(STATUS "dpkg-shlibdeps not found: `cpack -G DEB` needs it for the package's dependencies "
                 "(Debian: apt-get install dpkg-dev)")
endif()
include(CPack)
