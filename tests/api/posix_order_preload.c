/*
 * posix_order_preload.c - an interposer loaded ahead of libri2n
 * (LD_PRELOAD) whose write() never reaches libri2n: a raw system call, as
 * some tracing or sandboxing libraries do.  For posix_order_ahead.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((visibility("default"))) ssize_t write(int fd, const void *buf, size_t len)
{
	return syscall(SYS_write, fd, buf, len);
}
