#ifndef HERALD_CSYSTEM_SHIM_H
#define HERALD_CSYSTEM_SHIM_H
/* Linux interfaces that Swift's Glibc module does not include. Only headers that do not
   redefine what Glibc's module already has (no _GNU_SOURCE here). */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#endif
