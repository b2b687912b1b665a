# 64-bit Arm Linux (GH200 and other arm64 hosts), cross-compiled on a Debian machine.
set(PERFSCOPE_CROSS_TRIPLE aarch64-linux-gnu)
set(PERFSCOPE_CROSS_PROCESSOR aarch64)
include(${CMAKE_CURRENT_LIST_DIR}/debian-cross.cmake)
