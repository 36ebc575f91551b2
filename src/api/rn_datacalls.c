/*
 * rn_datacalls.c - the interposed data calls: read, write, readv, writev,
 * recv, send, recvfrom, sendto, recvmsg, sendmsg (rn_datacalls.h).
 *
 * On a ri2n socket each goes through ri2n's fast path (rn_api_send /
 * rn_api_recv, see rn_inline.h): the program's own thread puts its bytes
 * onto the rails and, waiting for a reply, polls the rails itself, instead
 * of crossing the socketpair and waking ri2n's engine thread on the way.
 * Everything else passes straight through: a descriptor that is not ours
 * costs one lock-free look-up (rn_dc_ours).  Addresses and ancillary data
 * are what TCP gives on a connected socket: none.  Below them, the writers
 * that only mark the socket.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rn_api.h"
#include "rn_datacalls.h"
#include "rn_sys.h"

#define RN_DC_API __attribute__((visibility("default")))
#define REAL (rn_dc_real())

/*
 * The fast path for fd, if it is a ri2n socket: 1 with *rc the call's
 * result (errno set on -1); 0 if it is not (errno as it was).
 */
static int fast_send(int fd, const struct iovec *iov, int iovcnt, int flags, ssize_t *rc)
{
	int saved = errno, handled;

	*rc = rn_api_send(fd, rn_dc_known(), iov, iovcnt, flags, &handled);
	if (!handled)
		errno = saved;
	return handled;
}

static int fast_recv(int fd, const struct iovec *iov, int iovcnt, int flags, ssize_t *rc)
{
	int saved = errno, handled;

	*rc = rn_api_recv(fd, rn_dc_known(), iov, iovcnt, flags, &handled);
	if (!handled)
		errno = saved;
	return handled;
}

RN_DC_API ssize_t read(int fd, void *buf, size_t len)
{
	struct iovec iov = { buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_recv(fd, &iov, 1, 0, &rc))
		return rc;
	return REAL->read(fd, buf, len);
}

RN_DC_API ssize_t write(int fd, const void *buf, size_t len)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_send(fd, &iov, 1, 0, &rc))
		return rc;
	return REAL->write(fd, buf, len);
}

RN_DC_API ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	ssize_t rc;

	if (iovcnt >= 0 && iovcnt <= IOV_MAX && rn_dc_ours(fd) && fast_recv(fd, iov, iovcnt, 0, &rc))
		return rc;
	return REAL->readv(fd, iov, iovcnt);
}

RN_DC_API ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	ssize_t rc;

	if (iovcnt >= 0 && iovcnt <= IOV_MAX && rn_dc_ours(fd) && fast_send(fd, iov, iovcnt, 0, &rc))
		return rc;
	return REAL->writev(fd, iov, iovcnt);
}

RN_DC_API ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct iovec iov = { buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_recv(fd, &iov, 1, flags, &rc))
		return rc;
	return REAL->recv(fd, buf, len, flags);
}

RN_DC_API ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_send(fd, &iov, 1, flags, &rc))
		return rc;
	return REAL->send(fd, buf, len, flags);
}

RN_DC_API ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
			     socklen_t *alen)
{
	struct iovec iov = { buf, len };
	ssize_t rc;

	if (rn_dc_ours(fd) && fast_recv(fd, &iov, 1, flags, &rc)) {
		if (rc >= 0 && addr && alen)
			*alen = 0; /* a connected stream names no sender */
		return rc;
	}
	return REAL->recvfrom(fd, buf, len, flags, addr, alen);
}

RN_DC_API ssize_t sendto(int fd, const void *buf, size_t len, int flags,
			   const struct sockaddr *addr, socklen_t alen)
{
	struct iovec iov = { (void *)buf, len };
	ssize_t rc;

	/* TCP ignores the address of a sendto on a connected socket: so do we */
	if (rn_dc_ours(fd) && fast_send(fd, &iov, 1, flags, &rc))
		return rc;
	return REAL->sendto(fd, buf, len, flags, addr, alen);
}

RN_DC_API ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	ssize_t rc;

	if (m && m->msg_iovlen <= IOV_MAX && rn_dc_ours(fd) &&
	    fast_recv(fd, m->msg_iov, (int)m->msg_iovlen, flags, &rc)) {
		if (rc >= 0) {
			m->msg_namelen = 0;
			m->msg_controllen = 0;
			m->msg_flags = 0;
		}
		return rc;
	}
	return REAL->recvmsg(fd, m, flags);
}

static void mark_passed(const struct msghdr *m);

RN_DC_API ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	ssize_t rc;

	mark_passed(m);
	/* ancillary data means nothing to a TCP stream either */
	if (m && m->msg_iovlen <= IOV_MAX && rn_dc_ours(fd) &&
	    fast_send(fd, m->msg_iov, (int)m->msg_iovlen, flags, &rc))
		return rc;
	return REAL->sendmsg(fd, m, flags);
}

/*
 * ---- writers that only mark the socket ----
 *
 * They put their bytes into the descriptor, where ri2n's engine takes them:
 * the socket is marked first, so that fast sends after them take those
 * bytes first and the order holds (rn_api_note_plain).
 */

static void mark_plain(int fd)
{
	if (rn_dc_ours(fd)) {
		int saved = errno;

		rn_api_note_plain(fd);
		errno = saved;
	}
}

#define SENDFILE_CHUNK (64 << 10)

/*
 * sendfile to a ri2n socket: the kernel cannot put a file's pages on ri2n's
 * rails, and the descriptor's way cost a wake-up of the engine, a copy
 * through the socketpair, a second datagram for what a write just before
 * it sent (nginx's headers, then its body), and a look at the descriptor
 * before every later fast send.  So a file that reads at an offset (a
 * regular file: what sendfile takes) is read here, a chunk at a time, and
 * sent through the fast path; the offset (*off, or the file's own) moves
 * by what was sent, as sendfile's, so bytes read but not sent (a full
 * non-blocking socket) are read again next time.  1 with *rc the call's
 * result; 0 (nothing read, nothing sent) where `in` cannot be read that
 * way: then the kernel's sendfile does it.
 */
static int sendfile_fast(int out, int in, off64_t *off, size_t count, ssize_t *rc)
{
	size_t done = 0, cap = count < SENDFILE_CHUNK ? count : SENDFILE_CHUNK;
	int saved = errno, handled = 1, err = 0;
	off64_t base;
	char *buf;

	if (!rn_dc_ours(out) || count == 0)
		return 0;
	base = off ? *off : lseek64(in, 0, SEEK_CUR);
	if (base < 0 || !(buf = malloc(cap))) {
		errno = saved;
		return 0;
	}
	while (done < count) {
		size_t want = count - done < cap ? count - done : cap;
		ssize_t n = pread64(in, buf, want, base + (off64_t)done), s = 0;
		struct iovec iov;

		if (n <= 0) {
			err = n < 0 ? errno : 0;
			handled = done > 0 || (n < 0 && errno != EINVAL && errno != ESPIPE);
			break;
		}
		iov = (struct iovec){ buf, (size_t)n };
		if (!fast_send(out, &iov, 1, 0, &s)) {
			handled = done > 0;
			s = 0;
		}
		if (s < 0)
			err = errno;
		if (s > 0)
			done += (size_t)s;
		if (s < n)
			break;
	}
	free(buf);
	if (!handled) {
		errno = saved;
		return 0;
	}
	if (off)
		*off = base + (off64_t)done;
	else if (done > 0 && lseek64(in, base + (off64_t)done, SEEK_SET) < 0)
		err = errno; /* lseek worked above: not expected */
	*rc = done > 0 || !err ? (ssize_t)done : -1;
	errno = done > 0 || !err ? saved : err;
	return 1;
}

RN_DC_API ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	off64_t o = off ? *off : 0;
	ssize_t rc;

	if (sendfile_fast(out, in, off ? &o : NULL, count, &rc)) {
		if (off)
			*off = (off_t)o;
		return rc;
	}
	mark_plain(out);
	return REAL->sendfile(out, in, off, count);
}

RN_DC_API ssize_t sendfile64(int out, int in, off64_t *off, size_t count)
{
	ssize_t rc;

	if (sendfile_fast(out, in, off, count, &rc))
		return rc;
	mark_plain(out);
	return REAL->sendfile64(out, in, off, count);
}

RN_DC_API ssize_t splice(int in, loff_t *in_off, int out, loff_t *out_off, size_t len,
			   unsigned int flags)
{
	if (rn_dc_ours(in)) { /* it reads the descriptor: what an epoll wait reported from ri2n goes there */
		int saved = errno;

		rn_api_to_descriptor(in);
		errno = saved;
	}
	mark_plain(out);
	return REAL->splice(in, in_off, out, out_off, len, flags);
}

RN_DC_API int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	for (unsigned int i = 0; v && i < n; i++)
		mark_passed(&v[i].msg_hdr);
	mark_plain(fd);
	return REAL->sendmmsg(fd, v, n, flags);
}

RN_DC_API FILE *fdopen(int fd, const char *mode)
{
	mark_plain(fd);
	return REAL->fdopen(fd, mode);
}

RN_DC_API int vdprintf(int fd, const char *fmt, va_list ap)
{
	mark_plain(fd);
	return REAL->vdprintf(fd, fmt, ap);
}

/*
 * shutdown is the descriptor's own: the engine sees the end there and sends
 * FIN after the bytes before it.  A fast send after it must fail (EPIPE), not
 * slip its bytes in before the FIN: marked, the next one looks into the
 * descriptor first and finds the end.
 */
RN_DC_API int shutdown(int fd, int how)
{
	if (how != SHUT_RD)
		mark_plain(fd);
	return REAL->shutdown(fd, how);
}

RN_DC_API int dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vdprintf(fd, fmt, ap);
	va_end(ap);
	return rc;
}

/* What dprintf and vdprintf compile to with _FORTIFY_SOURCE (flag: its level, minus 1). */
int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap);
int __dprintf_chk(int fd, int flag, const char *fmt, ...);

RN_DC_API int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
	mark_plain(fd);
	return REAL->vdprintf_chk(fd, flag, fmt, ap);
}

RN_DC_API int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = __vdprintf_chk(fd, flag, fmt, ap);
	va_end(ap);
	return rc;
}

/* At offset -1 (the file position: none on a socket) pwritev2 writes a socket as writev does. */
RN_DC_API ssize_t pwritev2(int fd, const struct iovec *iov, int iovcnt, off_t off, int flags)
{
	mark_plain(fd);
	return REAL->pwritev2(fd, iov, iovcnt, off, flags);
}

RN_DC_API ssize_t pwritev64v2(int fd, const struct iovec *iov, int iovcnt, off64_t off, int flags)
{
	mark_plain(fd);
	return REAL->pwritev64v2(fd, iov, iovcnt, off, flags);
}

/*
 * ---- calls that let another process write to a socket ----
 *
 * Its writes go into the descriptor, never through this process's fast
 * path: the sockets it may write to are marked before it gets them, so
 * that fast sends here take those bytes first.  A descriptor passed by
 * SCM_RIGHTS marks its socket; a child process (which inherits every
 * descriptor not closed on exec, or gets one from posix_spawn's file
 * actions) marks every socket of the table, as fork does (ri2n_api.c).
 */

/* Each ri2n socket named by an SCM_RIGHTS message of m. */
static void mark_passed(const struct msghdr *m)
{
	struct cmsghdr *c;

	if (!m || !m->msg_control || m->msg_controllen < sizeof(struct cmsghdr))
		return;
	for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR((struct msghdr *)m, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			mark_plain(fd);
		}
	}
}

static void mark_all(void)
{
	int saved = errno;

	rn_api_plain_all();
	errno = saved;
}

RN_DC_API int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	mark_all();
	return REAL->posix_spawn(pid, path, fa, attr, argv, envp);
}

RN_DC_API int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	mark_all();
	return REAL->posix_spawnp(pid, file, fa, attr, argv, envp);
}

RN_DC_API int system(const char *cmd)
{
	mark_all();
	return REAL->system(cmd);
}

RN_DC_API FILE *popen(const char *cmd, const char *mode)
{
	mark_all();
	return REAL->popen(cmd, mode);
}

/*
 * The kernel goes on sending a closed TCP socket's bytes and FIN after
 * _exit; ri2n's engine dies with the process.  So _exit and _Exit first wait
 * for the connections the program closed (rn_api_drain_quick_exit: Python's
 * socketserver children and load generators leave through os._exit right
 * after their close), and in a process that took connections over, for
 * every one, as exit does.
 */
RN_DC_API void _exit(int status)
{
	rn_api_drain_quick_exit();
	REAL->_exit(status);
}

RN_DC_API void _Exit(int status)
{
	rn_api_drain_quick_exit();
	REAL->_Exit(status);
}

/* glibc's fork without the fork handlers: ri2n_api.c's would not run. */
RN_DC_API pid_t _Fork(void)
{
	pid_t pid;

	mark_all();
	pid = REAL->_Fork();
	if (pid == 0)
		rn_pid_forked(); /* no fork handler ran: ri2n's cached id is the parent's */
	return pid;
}

/*
 * clone: its child runs no fork handler, and may share our memory, so
 * ri2n's cached process id is asked of the kernel from now on (rn_pid.c).
 * The three optional arguments are passed on as they came.
 */
RN_DC_API int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	va_list ap;
	void *ptid, *tls, *ctid;

	va_start(ap, arg);
	ptid = va_arg(ap, void *);
	tls = va_arg(ap, void *);
	ctid = va_arg(ap, void *);
	va_end(ap);
	rn_pid_unsure();
	return REAL->clone(fn, stack, flags, arg, ptid, tls, ctid);
}

/*
 * vfork: its child runs on the caller's stack until it execs, so no C
 * function may stand between the caller and libc's vfork (the child would
 * return from ours and the parent resume in a frame the child overwrote).
 * The assembly below marks every socket and then jumps to libc's vfork
 * with the caller's own return address (x86-64).  Elsewhere vfork is
 * fork, as POSIX allows.
 */
__attribute__((visibility("hidden"), used)) void *rn_dc_vfork_prep(void);
void *rn_dc_vfork_prep(void)
{
	rn_pid_unsure(); /* the child shares our memory, with the cached process id */
	mark_all();
	return (void *)REAL->vfork;
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	"vfork:\n"
#ifdef __CET__
	"	endbr64\n"
#endif
	"	sub $8, %rsp\n"       /* the call below needs a 16-byte aligned stack */
	"	call rn_dc_vfork_prep\n"
	"	add $8, %rsp\n"
	"	jmp *%rax\n"          /* libc's vfork returns to our caller (and its child too) */
	".size vfork, .-vfork\n");
#else
RN_DC_API pid_t vfork(void)
{
	return fork(); /* the fork handler marks every socket */
}
#endif

/* For another ri2n interposer behind this one (rn_dc_first): where this one passes name on to. */
RN_DC_API void *rn_dc_next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	/* no tail call: RTLD_NEXT counts from dlsym's caller, which must be this object */
	__asm__ __volatile__("" : : "r"(f) : "memory");
	return f;
}

/*
 * The rn_dc_next of the object `at` describes, if it is another ri2n
 * interposer (an object that compiled this file); NULL if not.
 */
static void *next_after(const Dl_info *at)
{
	void *h, *(*next)(const char *);
	Dl_info nd;

	if (!at->dli_fname || !at->dli_fname[0] || !(h = dlopen(at->dli_fname, RTLD_LAZY | RTLD_NOLOAD)))
		return NULL;
	*(void **)&next = dlsym(h, "rn_dc_next");
	dlclose(h);
	/* dlsym also searches the object's dependencies: the hook must be its own */
	if (!next || !dladdr(*(void **)&next, &nd) || nd.dli_fbase != at->dli_fbase)
		return NULL;
	return (void *)next;
}

/*
 * Whether the program's call `name` reaches our definition: ours is the
 * first in the lookup order, or every one before it is another ri2n
 * interposer (ri2n-run's shim ahead of libri2n), which passes the call on
 * for every descriptor it does not serve itself.
 */
static int reaches_us(const char *name)
{
	Dl_info mine, theirs;
	void *f = dlsym(RTLD_DEFAULT, name);

	if (!dladdr((void *)reaches_us, &mine))
		return 0;
	for (int hops = 0; hops < 4; hops++) {
		void *(*next)(const char *);

		if (!f)
			return 1; /* nobody defines it: nobody calls it */
		if (!dladdr(f, &theirs))
			return 0;
		if (theirs.dli_fbase == mine.dli_fbase)
			return 1;
		if (!(*(void **)&next = next_after(&theirs)))
			return 0;
		f = next(name);
	}
	return 0;
}

int rn_dc_first(void)
{
	static const char *const names[] = {
		"write", "writev", "send", "sendto", "sendmsg", "sendmmsg", "sendfile", "splice",
		"fdopen", "vdprintf", "dprintf", "__dprintf_chk", "__vdprintf_chk", "pwritev2",
		"shutdown", "dup", "dup2", "dup3", "fcntl",
		"posix_spawn", "posix_spawnp", "system", "popen", "vfork", "_Fork",
	};
	int saved = errno, ok = 1;

	for (size_t i = 0; ok && i < sizeof(names) / sizeof(names[0]); i++)
		ok = reaches_us(names[i]);
	errno = saved;
	return ok;
}

static int g_sigio; /* (atomic) rn_dc_note_sigio was called */

void rn_dc_note_sigio(void)
{
	__atomic_store_n(&g_sigio, 1, __ATOMIC_RELAXED);
}

int rn_dc_sigio(void)
{
	return __atomic_load_n(&g_sigio, __ATOMIC_RELAXED);
}

/*
 * ioctl: FIONREAD (SIOCINQ), SIOCOUTQ and SIOCOUTQNSD on a ri2n socket count
 * what waits in ri2n's buffers too (ri2n_ioctl.c); every other request, and
 * every other descriptor, passes on; FIONBIO, once made, makes ri2n forget
 * the blocking modes it remembers (rn_api_flags_changed).  The third
 * argument is a pointer or a word, absent for some requests: read as a word
 * either way, as libc does.
 */
RN_DC_API int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == FIOSETOWN || req == SIOCSPGRP)
		rn_dc_note_sigio();
	if (arg && rn_api_queue_ioctl(req) && rn_dc_ours(fd)) {
		int saved = errno, handled, val, rc = rn_api_ioctl(fd, rn_dc_known(), req, &val, &handled);

		if (handled) {
			if (rc == 0)
				*(int *)arg = val;
			return rc;
		}
		errno = saved;
	}
	if (req == FIONBIO) {
		int rc = REAL->ioctl(fd, req, arg), saved = errno;

		rn_api_flags_changed();
		errno = saved;
		return rc;
	}
	return REAL->ioctl(fd, req, arg);
}
