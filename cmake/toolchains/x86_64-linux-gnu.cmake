# Cross-compiling for x86-64 Linux on a Debian machine of
# another architecture, with Debian's cross compiler and the amd64 (multiarch) -dev packages
# scripts/cross_deps.sh installs: libraries from /usr/lib/x86_64-linux-gnu, headers shared.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_LIBRARY_ARCHITECTURE x86_64-linux-gnu)
set(CMAKE_C_COMPILER x86_64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER x86_64-linux-gnu-g++)
set(CMAKE_STRIP x86_64-linux-gnu-strip)
# Programs (node, the host's tools) from the build machine; libraries and packages only for the target.
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/x86_64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
