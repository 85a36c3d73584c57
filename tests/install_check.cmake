# The installed tree works on its own (ctest Install.ExamplesRunFromTheInstalledTree):
# `cmake --install` into a fresh prefix; the tools, the documentation and the schemas are there;
# every record an installed example names exists relative to
# that example; the installed rths-numerical runs an example that reads a record, from
# share/rths/examples, in virtual time. No file of the source tree is read after the install.
#   cmake -DBUILD_DIR=<build folder> -DPREFIX=<scratch prefix> -P tests/install_check.cmake
foreach(var IN ITEMS BUILD_DIR PREFIX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_check.cmake: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc}): ${err}")
endif()

foreach(tool IN ITEMS rths-numerical rths-physical rths-relay rths-target rths-study rths-plan rths-bench-loop
                     rths-console)
  if(NOT EXISTS ${PREFIX}/bin/${tool})
    message(FATAL_ERROR "not installed: bin/${tool}")
  endif()
endforeach()
foreach(doc IN ITEMS README.md LICENSE copyright docs/reference-values.md)
  if(NOT EXISTS ${PREFIX}/share/doc/rths/${doc})
    message(FATAL_ERROR "not installed: share/doc/rths/${doc}")
  endif()
endforeach()
# The console's page and the uPlot it draws with (deploy/setup.sh installs uPlot before the build).
foreach(file IN ITEMS index.html charts.js console.js console.css node_modules/uplot/dist/uPlot.iife.min.js)
  if(NOT EXISTS ${PREFIX}/share/rths/console/${file})
    message(FATAL_ERROR "not installed: share/rths/console/${file}")
  endif()
endforeach()
# The schemas the README points a user to for the config (experiment.proto and the files it imports) and
# results formats.
foreach(schema IN ITEMS experiment.proto structure.proto ground_motion.proto site.proto setup.proto driver.proto
                        actuator.proto controller.proto models.proto link.proto realtime.proto results.proto wire.proto)
  if(NOT EXISTS ${PREFIX}/share/rths/proto/${schema})
    message(FATAL_ERROR "not installed: share/rths/proto/${schema}")
  endif()
endforeach()

# Every record an example names resolves where the example is installed.
set(examples ${PREFIX}/share/rths/examples)
file(GLOB_RECURSE configs ${examples}/*.textproto)
list(LENGTH configs count)
if(count LESS 14)
  message(FATAL_ERROR "only ${count} example configs installed under ${examples}")
endif()
set(records 0)
foreach(config IN LISTS configs)
  file(STRINGS ${config} lines REGEX "record *{ *path: *\"[^\"]+\"")
  get_filename_component(dir ${config} DIRECTORY)
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ".*record *{ *path: *\"([^\"]+)\".*" "\\1" path "${line}")
    math(EXPR records "${records} + 1")
    if(NOT EXISTS ${dir}/${path})
      message(FATAL_ERROR "${config} names the record ${path}, which is not installed beside it")
    endif()
  endforeach()
endforeach()
if(records LESS 14)
  message(FATAL_ERROR "only ${records} record paths found in the installed examples")
endif()

# The installed node runs an installed example that reads a record (1 s of El Centro, virtual time).
execute_process(COMMAND ${PREFIX}/bin/rths-numerical run ${examples}/seed002/spring.textproto --set duration_s=1
                        --out ${PREFIX}/run --quiet
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "installed rths-numerical run of the installed spring example exited ${rc}: ${err}${out}")
endif()
file(REMOVE_RECURSE ${PREFIX})
message(STATUS "installed tree: ${count} example configs, ${records} records resolved, spring example ran")
