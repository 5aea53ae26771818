#ifndef HERALD_CSQLITE_SHIM_H
#define HERALD_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is an integer cast to a function pointer: not importable. */
static inline sqlite3_destructor_type herald_sqlite_transient(void) { return SQLITE_TRANSIENT; }
/* sqlite3_db_config is variadic. */
static inline int herald_sqlite_defensive(sqlite3 *db, int on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, (int *)0);
}
/* The same for any option that takes (int on, int *out): trusted schema, triggers, views, ... */
static inline int herald_sqlite_db_config_int(sqlite3 *db, int op, int on) {
    return sqlite3_db_config(db, op, on, (int *)0);
}
#endif
