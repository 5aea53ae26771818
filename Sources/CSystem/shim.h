#ifndef HERALD_CSYSTEM_SHIM_H
#define HERALD_CSYSTEM_SHIM_H
/* Linux interfaces that Swift's Glibc module does not include. Only headers that do not
   redefine what Glibc's module already has (no _GNU_SOURCE here). */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>

/* Names the calling thread (at most 15 bytes kept). prctl is variadic, which Swift cannot
   call, and pthread_setname_np needs _GNU_SOURCE. */
static inline int herald_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}

/* `name` holds at least 16 bytes. */
static inline int herald_get_thread_name(char *name) {
    return prctl(PR_GET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
}
#endif
