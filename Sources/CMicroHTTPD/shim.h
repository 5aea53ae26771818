#ifndef HERALD_CMICROHTTPD_SHIM_H
#define HERALD_CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* A plain-string logger: MHD's logger takes a va_list, which Swift cannot format. */
typedef void (*herald_mhd_log_fn)(void *cls, const char *message);

/* MHD_OPTION_URI_LOG_CALLBACK's type (the header spells it only inside the varargs doc). */
typedef void *(*herald_mhd_uri_log_fn)(void *cls, const char *uri, struct MHD_Connection *connection);

/* Everything Herald passes to MHD_start_daemon. The caller keeps this struct alive until
 * MHD_stop_daemon has returned: MHD's logger receives a pointer to it. */
struct herald_mhd_config {
    unsigned int flags;
    int listen_fd; /* bound and listening; MHD owns it from the call on */
    MHD_AcceptPolicyCallback accept_policy;
    void *accept_policy_cls;
    MHD_AccessHandlerCallback access;
    void *access_cls;
    MHD_RequestCompletedCallback completed;
    void *completed_cls;
    MHD_NotifyConnectionCallback notify;
    void *notify_cls;
    herald_mhd_uri_log_fn uri_log;
    void *uri_log_cls;
    herald_mhd_log_fn log;
    void *log_cls;
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    unsigned int connection_timeout_s;
    unsigned int per_ip_limit;
    size_t connection_memory_limit;
};

static inline void herald_mhd_log_trampoline(void *cls, const char *fmt, va_list ap) {
    const struct herald_mhd_config *c = (const struct herald_mhd_config *)cls;
    char buf[1024];
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n < 0) return;
    size_t len = strlen(buf);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = '\0';
    if (c->log != NULL) c->log(c->log_cls, buf);
}

/* MHD_start_daemon is variadic: one wrapper with the options Herald sets.
 * MHD_OPTION_EXTERNAL_LOGGER must come first so that option errors are logged through it. */
static inline struct MHD_Daemon *herald_mhd_start(const struct herald_mhd_config *c) {
    return MHD_start_daemon(c->flags, 0, c->accept_policy, c->accept_policy_cls, c->access, c->access_cls,
                            MHD_OPTION_EXTERNAL_LOGGER, herald_mhd_log_trampoline, (void *)c,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)c->listen_fd,
                            MHD_OPTION_URI_LOG_CALLBACK, c->uri_log, c->uri_log_cls,
                            MHD_OPTION_NOTIFY_COMPLETED, c->completed, c->completed_cls,
                            MHD_OPTION_NOTIFY_CONNECTION, c->notify, c->notify_cls,
                            MHD_OPTION_THREAD_POOL_SIZE, c->thread_pool_size,
                            MHD_OPTION_CONNECTION_LIMIT, c->connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, c->connection_timeout_s,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, c->connection_memory_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, c->per_ip_limit,
                            MHD_OPTION_END);
}

/* MHD_get_connection_info is variadic. NULL when MHD does not know the address. */
static inline const struct sockaddr *herald_mhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}
/* The connection's socket (MHD_get_connection_info is variadic); -1 when unknown. */
static inline int herald_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}
#endif
