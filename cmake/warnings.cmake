# One interface target carries the project's warning policy; every component links it.
add_library(myriad_warnings INTERFACE)
target_compile_options(myriad_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Woverloaded-virtual
  -Wformat=2 -Wimplicit-fallthrough)
if(MYRIAD_WERROR)
  target_compile_options(myriad_warnings INTERFACE -Werror)
endif()
