// Names the calling thread as `top -H`, `ps -L` and debuggers show it (at most 15 characters),
// so a user can see which part of perfscope spends the CPU: "ps-sampler", "ps-db-writer", …
#pragma once

#include <pthread.h>

namespace perfscope {

inline void name_this_thread(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

}  // namespace perfscope
