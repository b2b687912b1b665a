# x86-64 Linux, cross-compiled on a Debian machine of another architecture.
set(PERFSCOPE_CROSS_TRIPLE x86_64-linux-gnu)
set(PERFSCOPE_CROSS_PROCESSOR x86_64)
include(${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake)
