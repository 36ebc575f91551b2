/*
 * rn_pairname.h - a connection's addresses written on its socketpair, so
 * that any process holding the user's end can read them (rn_pairname.c).
 */
#ifndef RN_PAIRNAME_H
#define RN_PAIRNAME_H

#include <netinet/in.h>

#include "rn_hsa.h"

/*
 * Names the engine's end eng_fd of a connected socket's socketpair after
 * the connection's local and peer addresses (an abstract AF_UNIX name), so
 * getpeername on the user's end tells them to whoever holds it: a child
 * after fork and exec, a process it was passed to.  Best effort: a
 * connection whose end cannot be named (a clash, a kernel without
 * abstract names) is just not recognised elsewhere.  Keeps errno.
 */
void rn_pairname_set(int eng_fd, const rn_hsa *local, const rn_hsa *peer);

/*
 * Whether fd is the user's end of a ri2n connection's socketpair named by
 * rn_pairname_set: 0 with the addresses in *local and *peer (either may be
 * NULL), or -1 (not one, or fd is no socket).  One getpeername system call.
 * Keeps errno.
 */
int rn_pairname_get(int fd, rn_hsa *local, rn_hsa *peer);

#endif
