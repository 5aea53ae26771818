#ifndef HERALD_COPENSSL_SHIM_H
#define HERALD_COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/crypto.h>

/* Function-like macros Swift cannot import. */
static inline void herald_OPENSSL_free(void *p) { OPENSSL_free(p); }
static inline long herald_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline int herald_SSL_set_tlsext_host_name(SSL *s, const char *n) { return (int)SSL_set_tlsext_host_name(s, n); }
static inline int herald_SSL_CTX_set_min_proto_version(SSL_CTX *c, int v) { return (int)SSL_CTX_set_min_proto_version(c, v); }
static inline long herald_SSL_CTX_set_mode(SSL_CTX *c, long m) { return SSL_CTX_set_mode(c, m); }
static inline long herald_SSL_CTX_set_options(SSL_CTX *c, long o) { return (long)SSL_CTX_set_options(c, o); }
static inline long herald_SSL_CTX_set_session_cache_mode(SSL_CTX *c, long m) { return SSL_CTX_set_session_cache_mode(c, m); }
static inline long herald_SSL_MODE_partial_moving(void) {
    return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS;
}
/* SSL_OP_* are built with a casting macro (SSL_OP_BIT). */
static inline long herald_SSL_OP_http2(void) { return (long)(SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION); }
#endif
