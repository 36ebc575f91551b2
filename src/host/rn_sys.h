/*
 * rn_sys.h - the one door for ri2n's own system calls.
 *
 * libri2n and ri2n-run define read, write, send, recv, close, dup3, ... for
 * the program (rn_datacalls.c, src/shim): a call ri2n makes for itself
 * through those names would come back into its own interposers, and
 * through libc's would be a cancellation point (pthread_cancel unwinding a
 * thread that holds a ri2n lock) and pass any interposer loaded ahead of
 * ri2n.  Every system call ri2n makes on its own behalf goes through here
 * instead: straight to the kernel by syscall(2), which is neither
 * interposed by ri2n nor a cancellation point.  Each returns what the
 * system call does (-1 with errno).
 *
 * tests/check_interposed.sh fails the build's tests if an object other than
 * the interposers references an interposed name; the one place a ri2n
 * thread may be cancelled is its explicit wait (rn_inline_wait_port).
 */
#ifndef RN_SYS_H
#define RN_SYS_H

#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static inline ssize_t rn_sys_read(int fd, void *buf, size_t len)
{
	return syscall(SYS_read, fd, buf, len);
}

static inline ssize_t rn_sys_write(int fd, const void *buf, size_t len)
{
	return syscall(SYS_write, fd, buf, len);
}

static inline ssize_t rn_sys_readv(int fd, const struct iovec *iov, int iovcnt)
{
	return syscall(SYS_readv, fd, iov, iovcnt);
}

static inline ssize_t rn_sys_writev(int fd, const struct iovec *iov, int iovcnt)
{
	return syscall(SYS_writev, fd, iov, iovcnt);
}

static inline ssize_t rn_sys_send(int fd, const void *buf, size_t len, int flags)
{
	return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

static inline ssize_t rn_sys_recv(int fd, void *buf, size_t len, int flags)
{
	return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

static inline ssize_t rn_sys_sendmsg(int fd, const struct msghdr *m, int flags)
{
	return syscall(SYS_sendmsg, fd, m, flags);
}

static inline ssize_t rn_sys_recvmsg(int fd, struct msghdr *m, int flags)
{
	return syscall(SYS_recvmsg, fd, m, flags);
}

static inline int rn_sys_sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
	return (int)syscall(SYS_sendmmsg, fd, v, n, flags);
}

static inline int rn_sys_recvmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags,
				  struct timespec *timeout)
{
	return (int)syscall(SYS_recvmmsg, fd, v, n, flags, timeout);
}

static inline int rn_sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static inline int rn_sys_dup3(int fd, int to, int flags)
{
	return (int)syscall(SYS_dup3, fd, to, flags);
}

static inline int rn_sys_shutdown(int fd, int how)
{
	return (int)syscall(SYS_shutdown, fd, how);
}

static inline int rn_sys_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	return (int)syscall(SYS_setsockopt, fd, level, name, val, len);
}

static inline int rn_sys_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	return (int)syscall(SYS_getsockopt, fd, level, name, val, len);
}

static inline int rn_sys_ioctl(int fd, unsigned long req, void *arg)
{
	return (int)syscall(SYS_ioctl, fd, req, arg);
}

static inline int rn_sys_fcntl(int fd, int cmd, long arg)
{
	return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

static inline pid_t rn_sys_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* Wakes every thread asleep on the futex word (FUTEX_WAKE, process-private). */
static inline int rn_sys_futex_wake_all(int *word)
{
	return (int)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* A wait that is never a cancellation point (sigmask NULL: the thread's own). */
static inline int rn_sys_ppoll(struct pollfd *pf, nfds_t n, const struct timespec *ts)
{
	return (int)syscall(SYS_ppoll, pf, n, ts, NULL, (size_t)(_NSIG / 8));
}

#endif
