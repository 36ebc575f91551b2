/*
 * test_henv.c - the host kit's environment and descriptor moves: random
 * words come from a per-thread pool, yet no word is handed out twice, not
 * by two threads and not by a forked child and its parent (the child's
 * pool is refilled); ri2n's descriptors move above the floor and keep or
 * lose close-on-exec as they had it, and a limit lowered under a floor
 * already read leaves the move working (the floor is read again).
 */
#define _GNU_SOURCE
#include "unit_common.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rn_henv.h"
#include "rn_sys.h"

#define DRAWS 200 /* more than one pool's worth */

static int seen(const uint64_t *v, int n, uint64_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static void test_rng_fork(void **state)
{
	uint64_t mine[DRAWS], theirs[DRAWS];
	int p[2];
	pid_t pid;
	int st;

	(void)state;
	(void)rn_henv_rng(NULL); /* the pool is filled: the child inherits it */
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < DRAWS; i++)
			theirs[i] = rn_henv_rng(NULL);
		_exit(write(p[1], theirs, sizeof(theirs)) == (ssize_t)sizeof(theirs) ? 0 : 1);
	}
	for (int i = 0; i < DRAWS; i++)
		mine[i] = rn_henv_rng(NULL);
	assert_int_equal(read(p[0], theirs, sizeof(theirs)), (ssize_t)sizeof(theirs));
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int i = 0; i < DRAWS; i++) {
		assert_false(seen(theirs, DRAWS, mine[i]));
		assert_false(seen(mine, i, mine[i])); /* and none twice in one process */
	}
	close(p[0]);
	close(p[1]);
}

static void *draw(void *arg)
{
	uint64_t *v = arg;

	for (int i = 0; i < DRAWS; i++)
		v[i] = rn_henv_rng(NULL);
	return NULL;
}

static void test_rng_threads(void **state)
{
	static uint64_t a[DRAWS], b[DRAWS];
	pthread_t t;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, draw, a), 0);
	draw(b);
	assert_int_equal(pthread_join(t, NULL), 0);
	for (int i = 0; i < DRAWS; i++) {
		assert_false(seen(b, DRAWS, a[i]));
		assert_true(a[i] != 0 || a[(i + 1) % DRAWS] != 0); /* not a zeroed pool */
	}
}

static void test_fd_high(void **state)
{
	struct rlimit old, low;
	int sv[2], fd, hi;
	long floor;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	floor = rn_sys_fd_floor();
	assert_true(floor > 3);
	/* close-on-exec kept, and not added */
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	hi = rn_sys_fd_high_cloexec(sv[0]);
	assert_true(hi >= floor);
	assert_true(fcntl(hi, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(fcntl(sv[0], F_GETFD), -1); /* the low number was closed */
	close(hi);
	fd = rn_sys_fd_high(sv[1]); /* asked: it had FD_CLOEXEC */
	assert_true(fd >= floor && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
	close(fd);
	fd = dup(0);
	assert_true(fd >= 0 && !(fcntl(fd, F_GETFD) & FD_CLOEXEC));
	hi = rn_sys_fd_high(fd);
	assert_true(hi >= floor && !(fcntl(hi, F_GETFD) & FD_CLOEXEC));
	close(hi);
	/* a limit lowered under the floor read before: the move fails once, then works below it */
	low = old;
	low.rlim_cur = (rlim_t)floor; /* the floor itself is now out of range */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (int i = 0; i < 3; i++) {
		fd = dup(0);
		assert_true(fd >= 0);
		hi = rn_sys_fd_high(fd);
		assert_true(hi >= 0 && hi < (int)floor);
		assert_true(fcntl(hi, F_GETFD) >= 0);
		close(hi);
	}
	fd = rn_sys_dup_high(0);
	assert_true(fd >= 0 && fd < (int)floor);
	close(fd);
	assert_true(rn_sys_fd_floor() <= floor / 2);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rng_fork),
		cmocka_unit_test(test_rng_threads),
		cmocka_unit_test(test_fd_high),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
