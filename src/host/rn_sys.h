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

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

struct mmsghdr; /* <sys/socket.h> declares it only with _GNU_SOURCE */

/*
 * ThreadSanitizer follows descriptors through the libc calls it intercepts
 * (open, socket, dup, close): one ri2n closes by syscall(2) stays open in
 * its books, and the program's next dup or open that reuses the number
 * looks like a race with the thread that opened it.  Under TSan each close
 * here is announced through the sanitizer's system call hook first.
 */
#if defined(__SANITIZE_THREAD__)
#define RN_SYS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RN_SYS_TSAN 1
#endif
#endif
#ifdef RN_SYS_TSAN
void __sanitizer_syscall_pre_impl_close(long fd);
#define RN_SYS_CLOSING(fd) __sanitizer_syscall_pre_impl_close((long)(fd))
#else
#define RN_SYS_CLOSING(fd) ((void)0)
#endif

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

static inline ssize_t rn_sys_sendto(int fd, const void *buf, size_t len, int flags,
				    const struct sockaddr *a, socklen_t alen)
{
	return syscall(SYS_sendto, fd, buf, len, flags, a, alen);
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
	RN_SYS_CLOSING(fd);
	return (int)syscall(SYS_close, fd);
}

static inline int rn_sys_dup3(int fd, int to, int flags)
{
	if (fd != to)
		RN_SYS_CLOSING(to);
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

static inline int rn_sys_socket(int domain, int type, int proto)
{
	return (int)syscall(SYS_socket, domain, type, proto);
}

static inline int rn_sys_bind(int fd, const struct sockaddr *a, socklen_t len)
{
	return (int)syscall(SYS_bind, fd, a, len);
}

static inline int rn_sys_getsockname(int fd, struct sockaddr *a, socklen_t *len)
{
	return (int)syscall(SYS_getsockname, fd, a, len);
}

static inline int rn_sys_fstat(int fd, struct stat *sb)
{
	return (int)syscall(SYS_fstat, fd, sb);
}

/*
 * stdio on a descriptor of ri2n's own (its statistics files): fdopen and
 * fclose are interposed too (ri2n-run marks the program's stdio writers), so
 * ri2n calls glibc's own exported names for the same functions, which no
 * interposer defines.
 */
extern FILE *_IO_fdopen(int fd, const char *mode);
extern int _IO_fclose(FILE *f);

static inline FILE *rn_sys_fdopen(int fd, const char *mode)
{
	return _IO_fdopen(fd, mode);
}

static inline int rn_sys_fclose(FILE *f)
{
	RN_SYS_CLOSING(fileno(f));
	return _IO_fclose(f);
}

static inline int rn_sys_getpeername(int fd, struct sockaddr *a, socklen_t *len)
{
	return (int)syscall(SYS_getpeername, fd, a, len);
}

/* openat(AT_FDCWD, ...): for the few files ri2n reads itself (/proc/self/status). */
static inline int rn_sys_open(const char *path, int flags)
{
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, 0);
}

/* Anonymous private memory, zeroed by the kernel (rn_henv.c's big blocks). */
static inline void *rn_sys_mmap_anon(size_t len)
{
	return (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static inline int rn_sys_munmap(void *p, size_t len)
{
	return (int)syscall(SYS_munmap, p, len);
}

static inline pid_t rn_sys_getpid(void)
{
	return (pid_t)syscall(SYS_getpid);
}

/*
 * This process's id, read once and again after fork or _Fork (rn_pid.c);
 * every call asks the kernel once a vfork()ed or clone()d child may share
 * our memory.  rn_pid_forked (in a child of _Fork) and rn_pid_unsure (before
 * vfork or clone) are the interposers' calls.
 */
pid_t rn_pid(void);
void rn_pid_forked(void);
void rn_pid_unsure(void);

static inline pid_t rn_sys_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/*
 * Sleeps while *word holds val (FUTEX_WAIT, process-private): 0 when woken
 * (or spuriously), -1 with EAGAIN if *word was not val, EINTR for a signal
 * whose handler lacks SA_RESTART (with it the wait restarts, as recv's).
 */
static inline int rn_sys_futex_wait(int *word, int val)
{
	return (int)syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

/* Wakes at most n threads asleep on the futex word (FUTEX_WAKE, process-private). */
static inline int rn_sys_futex_wake(int *word, int n)
{
	return (int)syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
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

/*
 * Cancellation around one blocking call made for the program (a read or
 * write that sleeps, as the kernel's TCP read would): the calls above are
 * not cancellation points, so a thread that may be cancelled there says so
 * with rn_sys_cancel_begin (asynchronous cancellation, as glibc itself does
 * around its own cancellable system calls; a cancel already pending acts at
 * once) and returns to what it had with rn_sys_cancel_end (errno kept).
 * Between the two the thread holds no lock, and a pthread_cleanup_push
 * handler undoes whatever it holds (references, a waiter's link).
 */
static inline int rn_sys_cancel_begin(void)
{
	int old = PTHREAD_CANCEL_DEFERRED;

	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	return old;
}

static inline void rn_sys_cancel_end(int old)
{
	int e = errno;

	pthread_setcanceltype(old, NULL);
	errno = e;
}

/*
 * A wait during which the thread must not be cancelled (a condition wait
 * whose mutex, or a command on its stack, cancellation would leave behind);
 * rn_sys_nocancel_end restores what the thread had.  No system call.
 */
static inline int rn_sys_nocancel_begin(void)
{
	int old = PTHREAD_CANCEL_ENABLE;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void rn_sys_nocancel_end(int old)
{
	int e = errno;

	pthread_setcancelstate(old, NULL);
	errno = e;
}

static inline int rn_sys_close_range(unsigned int first, unsigned int last, unsigned int flags)
{
	return (int)syscall(SYS_close_range, first, last, flags);
}

static inline int rn_sys_epoll_create1(int flags)
{
	return (int)syscall(SYS_epoll_create1, flags);
}

static inline int rn_sys_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	return (int)syscall(SYS_epoll_ctl, epfd, op, fd, ev);
}

/* A look at an epoll set that never sleeps (timeout 0). */
static inline int rn_sys_epoll_peek(int epfd, struct epoll_event *ev, int max)
{
	return (int)syscall(SYS_epoll_pwait, epfd, ev, max, 0, NULL, (size_t)(_NSIG / 8));
}

static inline int rn_sys_eventfd(unsigned int count, int flags)
{
	return (int)syscall(SYS_eventfd2, count, flags);
}

static inline int rn_sys_timerfd_create(int clock, int flags)
{
	return (int)syscall(SYS_timerfd_create, clock, flags);
}

/*
 * Where ri2n's own descriptors begin: 4096, or half the limit if that is
 * lower; -1 if unknown.  Read from the kernel on the first call and every
 * 64th after it (a prlimit call for every socketpair end was a system call
 * per connection), so a limit the program raises moves the floor within 64
 * descriptors; one it lowers under the floor makes the next move fail,
 * which forgets the floor (rn_sys_fd_floor_forget).
 */
static inline long *rn_sys_fd_floor_cache(void)
{
	static long floor = -1;

	return &floor;
}

static inline void rn_sys_fd_floor_forget(void)
{
	__atomic_store_n(rn_sys_fd_floor_cache(), -1, __ATOMIC_RELAXED);
}

static inline long rn_sys_fd_floor(void)
{
	static unsigned uses;
	struct rlimit rl;
	long floor = __atomic_load_n(rn_sys_fd_floor_cache(), __ATOMIC_RELAXED);

	if (floor >= 0 && (__atomic_fetch_add(&uses, 1, __ATOMIC_RELAXED) & 63) != 0)
		return floor;
	if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) < 0)
		return -1;
	floor = rl.rlim_cur / 2 > 4096 ? 4096 : (long)(rl.rlim_cur / 2);
	__atomic_store_n(rn_sys_fd_floor_cache(), floor, __ATOMIC_RELAXED);
	return floor;
}

/*
 * A close-on-exec duplicate of fd among ri2n's own numbers (see
 * rn_sys_fd_floor), so that it never takes a number the program would get
 * from its next socket(); -1 + errno on failure.
 */
static inline int rn_sys_dup_high(int fd)
{
	long floor = rn_sys_fd_floor();
	int nfd = rn_sys_fcntl(fd, F_DUPFD_CLOEXEC, floor < 0 ? 0 : floor);

	if (nfd < 0 && errno == EINVAL && floor > 0) { /* the limit went under the floor */
		rn_sys_fd_floor_forget();
		nfd = rn_sys_fcntl(fd, F_DUPFD_CLOEXEC, 0);
	}
	return nfd;
}

/*
 * rn_sys_fd_high (below) for a descriptor made close-on-exec (SOCK_CLOEXEC,
 * EFD_CLOEXEC, ...): the same move without asking the kernel for its flags.
 */
static inline int rn_sys_fd_high_cloexec(int fd)
{
	long floor;
	int nfd;

	if (fd < 0 || (floor = rn_sys_fd_floor()) < 0 || fd >= floor)
		return fd;
	nfd = rn_sys_fcntl(fd, F_DUPFD_CLOEXEC, (long)floor);
	if (nfd < 0) {
		if (errno == EINVAL)
			rn_sys_fd_floor_forget();
		return fd;
	}
	rn_sys_close(fd);
	return nfd;
}

/*
 * Moves ri2n's own descriptor fd (a rail socket, the engine's end of a
 * socketpair, an eventfd) up to a number at or above a floor high in the
 * process's range (half its RLIMIT_NOFILE, at most 4096), keeping
 * FD_CLOEXEC: the numbers a program's socket(), accept() and open() return
 * stay those it would get without ri2n, so a program that sizes a table by
 * its own descriptor count finds its sockets inside it.  Returns the new
 * number, or fd itself when nothing is free up there.
 */
static inline int rn_sys_fd_high(int fd)
{
	int nfd, fl;

	if (fd < 0 || (fl = rn_sys_fcntl(fd, F_GETFD, 0)) < 0)
		return fd;
	nfd = rn_sys_fd_high_cloexec(fd);
	if (nfd != fd && !(fl & FD_CLOEXEC))
		rn_sys_fcntl(nfd, F_SETFD, 0);
	return nfd;
}

/*
 * First thing in a pthread_cleanup_push handler that runs as a cancelled
 * thread unwinds: AddressSanitizer does not clear the poison the unwound
 * frames left on the stack, so the handler's own locals (and its callees')
 * would look like overflows into them.  The stack below the handler is dead:
 * its poison goes (64 KiB of it; nothing without ASan).
 */
#if defined(__SANITIZE_ADDRESS__)
#define RN_SYS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RN_SYS_ASAN 1
#endif
#endif
#ifdef RN_SYS_ASAN
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#define RN_SYS_CANCEL_UNPOISON()                                                         \
	__asan_unpoison_memory_region((char *)__builtin_frame_address(0) - 65536, 65536)
#else
#define RN_SYS_CANCEL_UNPOISON() ((void)0)
#endif

#endif
