/*
 * rn_api.h - what the LD_PRELOAD shim needs beyond ri2n.h.
 */
#ifndef RN_API_H
#define RN_API_H

#include <sys/socket.h>

/* ri2n_accept with accept4() flags (SOCK_NONBLOCK, SOCK_CLOEXEC). */
int rn_api_accept(int fd, struct sockaddr *addr, socklen_t *len, int flags);
/* True if fd is a live ri2n socket. */
int rn_api_is_ri2n(int fd);

#endif
