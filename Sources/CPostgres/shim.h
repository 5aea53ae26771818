#ifndef HERALD_CPOSTGRES_SHIM_H
#define HERALD_CPOSTGRES_SHIM_H
/* pkg-config libpq gives -I/usr/include/postgresql on Debian 12 (libpq 15). */
#include <libpq-fe.h>

/* The PG_DIAG_* field codes are character literals; name them as ints for Swift. */
static inline int herald_pq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int herald_pq_diag_severity(void) { return PG_DIAG_SEVERITY_NONLOCALIZED; }
static inline int herald_pq_diag_message(void) { return PG_DIAG_MESSAGE_PRIMARY; }
static inline int herald_pq_diag_detail(void) { return PG_DIAG_MESSAGE_DETAIL; }
static inline int herald_pq_diag_constraint(void) { return PG_DIAG_CONSTRAINT_NAME; }

/* libpq prints NOTICE/WARNING messages to stderr by default; a server process logs JSON
   lines only, so a connection drops them (the server's own log keeps them). */
static void herald_pq_drop_notice(void *arg, const char *message) { (void)arg; (void)message; }
static inline void herald_pq_quiet_notices(PGconn *conn) {
    PQsetNoticeProcessor(conn, herald_pq_drop_notice, (void *)0);
}
#endif
