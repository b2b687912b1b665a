# Cross-compiling on a Debian machine for another Linux architecture, with Debian's cross
# compiler and the target's multiarch -dev packages (scripts/cross_deps.sh installs both):
# libraries from /usr/lib/<triple>, headers shared. Included by <triple>.cmake, which sets
# PERFSCOPE_CROSS_TRIPLE and PERFSCOPE_CROSS_PROCESSOR.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR ${PERFSCOPE_CROSS_PROCESSOR})
set(CMAKE_LIBRARY_ARCHITECTURE ${PERFSCOPE_CROSS_TRIPLE})
set(CMAKE_C_COMPILER ${PERFSCOPE_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${PERFSCOPE_CROSS_TRIPLE}-g++)
set(CMAKE_STRIP ${PERFSCOPE_CROSS_TRIPLE}-strip)
# Programs (node, the host's tools) from the build machine; libraries and packages only for the target.
set(CMAKE_FIND_ROOT_PATH /usr/${PERFSCOPE_CROSS_TRIPLE} /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${PERFSCOPE_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
