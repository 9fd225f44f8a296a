# Checks that an example links the CUDA runtime (and the other libraries Myriad replaces) as
# shared libraries, which is what lets Myriad's shims intercept it.
#
#   cmake -DREADELF=readelf -DEXE=path/to/example -DNEEDED=libcudart.so.13,libnccl.so.2 -P check_linkage.cmake
#
# Fails unless every library in NEEDED (comma-separated) is a DT_NEEDED entry of EXE and the
# CUDA fat-binary registration is imported from libcudart.so.13 (a statically linked runtime
# would define it inside the executable).
cmake_minimum_required(VERSION 3.25)
foreach(var READELF EXE NEEDED)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_linkage.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${EXE}")
  message(FATAL_ERROR "${EXE} does not exist (build the examples first)")
endif()

execute_process(COMMAND "${READELF}" -d -W "${EXE}" OUTPUT_VARIABLE dyn ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} -d ${EXE} failed (${rc}): ${err}")
endif()
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*\\[[^\n]*\\]" needed_lines "${dyn}")
set(have)
foreach(line IN LISTS needed_lines)
  string(REGEX REPLACE ".*\\[([^\n]*)\\]$" "\\1" name "${line}")
  list(APPEND have "${name}")
endforeach()

string(REPLACE "," ";" want "${NEEDED}")
set(missing)
foreach(lib IN LISTS want)
  if(NOT lib IN_LIST have)
    list(APPEND missing "${lib}")
  endif()
endforeach()
if(missing)
  message(FATAL_ERROR "${EXE} does not link ${missing} dynamically; its NEEDED entries are: ${have}")
endif()

execute_process(COMMAND "${READELF}" --dyn-syms -W "${EXE}" OUTPUT_VARIABLE syms ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} --dyn-syms ${EXE} failed (${rc}): ${err}")
endif()
if(NOT syms MATCHES "UND __cudaRegisterFatBinary@libcudart\\.so\\.13")
  message(FATAL_ERROR "${EXE} does not import __cudaRegisterFatBinary from libcudart.so.13: "
                      "the CUDA runtime looks statically linked (rebuild with -cudart shared)")
endif()
message(STATUS "${EXE}: NEEDED ${have}")
