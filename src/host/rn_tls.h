/*
 * rn_tls.h - RN_TLS, ri2n's per-thread variables, for every layer above
 * the core (the core keeps none).
 */
#ifndef RN_TLS_H
#define RN_TLS_H

/*
 * Per-thread variables of the hot path.  Initial-exec: read at a fixed
 * offset from the thread pointer, not through __tls_get_addr (about 50
 * instructions per round trip of a small ping-pong).  A library loaded
 * with dlopen() after start still gets them from the few hundred bytes
 * glibc keeps for that; these take well under a hundred.
 */
#define RN_TLS __thread __attribute__((tls_model("initial-exec")))

#endif
