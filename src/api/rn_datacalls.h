/*
 * rn_datacalls.h - the data calls as an interposer defines them.
 *
 * read, write, readv, writev, recv, send, recvfrom, sendto, recvmsg and
 * sendmsg on a ri2n socket go through the fast path (rn_api_send /
 * rn_api_recv: the calling thread drives its connection); on anything else
 * they pass straight on.  The writers the fast path does not serve
 * (sendfile, splice, sendmmsg, stdio through fdopen, dprintf and its
 * _FORTIFY_SOURCE form, pwritev2) mark the
 * socket, and so does shutdown; sendmsg and sendmmsg mark the sockets they
 * pass (SCM_RIGHTS); the calls that make a child process (posix_spawn,
 * posix_spawnp, vfork, _Fork, system, popen) mark every socket, as fork
 * does (ri2n_api.c).  Two interposers compile rn_datacalls.c: ri2n-run's
 * (sendfile, splice, sendmmsg, stdio through fdopen, dprintf) mark the
 * socket, and so does shutdown; ioctl answers FIONREAD and SIOCOUTQ with
 * ri2n's buffers counted.  Two interposers compile rn_datacalls.c: ri2n-run's
 * shim (rn_shim_io.c) and libri2n itself (ri2n_plain.c).  Each defines the
 * three hooks below.
 */
#ifndef RN_DATACALLS_H
#define RN_DATACALLS_H

#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The definitions after the interposer's own (libc's), as dlsym(RTLD_NEXT) finds them. */
typedef struct rn_datacalls_real {
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	/* writers the fast path does not serve: they only mark the socket */
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	ssize_t (*sendfile64)(int, int, off64_t *, size_t);
	ssize_t (*splice)(int, loff_t *, int, loff_t *, size_t, unsigned int);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	FILE *(*fdopen)(int, const char *);
	int (*vdprintf)(int, const char *, va_list);
	int (*shutdown)(int, int); /* marks the socket too: the next fast send sees the end */
	/* _FORTIFY_SOURCE's dprintf, and pwritev2 (offset -1 writes a socket): they mark it */
	int (*vdprintf_chk)(int, int, const char *, va_list);
	ssize_t (*pwritev2)(int, const struct iovec *, int, off_t, int);
	ssize_t (*pwritev64v2)(int, const struct iovec *, int, off64_t, int);
	/* calls that make a child process, which inherits the descriptors: they mark every socket */
	int (*posix_spawn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			   const posix_spawnattr_t *, char *const[], char *const[]);
	int (*posix_spawnp)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const[], char *const[]);
	int (*system)(const char *);
	FILE *(*popen)(const char *, const char *);
	pid_t (*vfork)(void);
	pid_t (*_Fork)(void);
	int (*clone)(int (*)(void *), void *, int, void *, ...);
	void (*_exit)(int) __attribute__((noreturn));
	void (*_Exit)(int) __attribute__((noreturn));
	int (*ioctl)(int, unsigned long, ...); /* FIONREAD, SIOCOUTQ: ri2n's buffers count too */
} rn_datacalls_real;

/* Fills r from dlsym(RTLD_NEXT) as seen from the caller's object. */
#define RN_DATACALLS_FIND(r)                                                 \
	do {                                                                 \
		*(void **)&(r)->read = dlsym(RTLD_NEXT, "read");             \
		*(void **)&(r)->write = dlsym(RTLD_NEXT, "write");           \
		*(void **)&(r)->readv = dlsym(RTLD_NEXT, "readv");           \
		*(void **)&(r)->writev = dlsym(RTLD_NEXT, "writev");         \
		*(void **)&(r)->recv = dlsym(RTLD_NEXT, "recv");             \
		*(void **)&(r)->send = dlsym(RTLD_NEXT, "send");             \
		*(void **)&(r)->recvfrom = dlsym(RTLD_NEXT, "recvfrom");     \
		*(void **)&(r)->sendto = dlsym(RTLD_NEXT, "sendto");         \
		*(void **)&(r)->recvmsg = dlsym(RTLD_NEXT, "recvmsg");       \
		*(void **)&(r)->sendmsg = dlsym(RTLD_NEXT, "sendmsg");       \
		*(void **)&(r)->sendfile = dlsym(RTLD_NEXT, "sendfile");     \
		*(void **)&(r)->sendfile64 = dlsym(RTLD_NEXT, "sendfile64"); \
		*(void **)&(r)->splice = dlsym(RTLD_NEXT, "splice");         \
		*(void **)&(r)->sendmmsg = dlsym(RTLD_NEXT, "sendmmsg");     \
		*(void **)&(r)->fdopen = dlsym(RTLD_NEXT, "fdopen");         \
		*(void **)&(r)->vdprintf = dlsym(RTLD_NEXT, "vdprintf");     \
		*(void **)&(r)->shutdown = dlsym(RTLD_NEXT, "shutdown");     \
		*(void **)&(r)->vdprintf_chk = dlsym(RTLD_NEXT, "__vdprintf_chk"); \
		*(void **)&(r)->pwritev2 = dlsym(RTLD_NEXT, "pwritev2");     \
		*(void **)&(r)->pwritev64v2 = dlsym(RTLD_NEXT, "pwritev64v2"); \
		*(void **)&(r)->posix_spawn = dlsym(RTLD_NEXT, "posix_spawn"); \
		*(void **)&(r)->posix_spawnp = dlsym(RTLD_NEXT, "posix_spawnp"); \
		*(void **)&(r)->system = dlsym(RTLD_NEXT, "system");         \
		*(void **)&(r)->popen = dlsym(RTLD_NEXT, "popen");           \
		*(void **)&(r)->vfork = dlsym(RTLD_NEXT, "vfork");           \
		*(void **)&(r)->_Fork = dlsym(RTLD_NEXT, "_Fork");           \
		*(void **)&(r)->clone = dlsym(RTLD_NEXT, "clone");           \
		*(void **)&(r)->_exit = dlsym(RTLD_NEXT, "_exit");           \
		*(void **)&(r)->_Exit = dlsym(RTLD_NEXT, "_Exit");           \
		*(void **)&(r)->ioctl = dlsym(RTLD_NEXT, "ioctl");           \
	} while (0)

/*
 * Hooks.  rn_dc_ours: whether fd may be a ri2n socket of this process; asked
 * of every descriptor the program reads or writes, so lock-free and without
 * a system call (a yes is checked again).  rn_dc_known: rn_api_send's
 * `known` (every close of the process is seen).  rn_dc_real: the calls to
 * pass on to.
 */
int rn_dc_ours(int fd);
int rn_dc_known(void);

/*
 * Whether the program named a signal owner or a signal for any descriptor
 * (fcntl F_SETOWN, F_SETOWN_EX or F_SETSIG; ioctl FIOSETOWN or SIOCSPGRP)
 * through an interposed call: until then a socket ri2n-run converts has
 * none to carry over (rn_shim_sock.c, adopt), and is not asked.
 */
void rn_dc_note_sigio(void);
int rn_dc_sigio(void);
const rn_datacalls_real *rn_dc_real(void);

/*
 * Whether the program's writing and descriptor-sharing calls (write, send,
 * dup, fdopen, posix_spawn, ...) reach the ones the interposer that
 * compiled rn_datacalls.c defines (first in the lookup order, or behind
 * another ri2n interposer, which passes them on: rn_dc_next): 0 when libri2n
 * was loaded by dlopen (the program's write is libc's) or another
 * interposer comes first.  Only when 1 may a
 * fast send skip the look into the descriptor (rn_api_writes_seen).
 */
int rn_dc_first(void);
/* Exported: where this interposer passes `name` on to (dlsym(RTLD_NEXT) from here). */
void *rn_dc_next(const char *name);

#endif
