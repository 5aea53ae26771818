#ifndef HERALD_CNGHTTP2_SHIM_H
#define HERALD_CNGHTTP2_SHIM_H
#include <nghttp2/nghttp2.h>

/* Expression macros Swift cannot import. */
static inline int herald_nghttp2_initial_window_size(void) { return NGHTTP2_INITIAL_WINDOW_SIZE; }
static inline int herald_nghttp2_max_window_size(void) { return NGHTTP2_MAX_WINDOW_SIZE; }
#endif
