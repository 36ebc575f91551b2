/*
 * posix_order.c - byte order whatever path a write takes (docs/API.md,
 * "Sharing a descriptor"): a ri2n socket written by another number for it
 * (dup, F_DUPFD, dup2 onto stdout), by stdio, by dprintf as _FORTIFY_SOURCE
 * compiles it, by pwritev2, by a child process
 * (posix_spawn, vfork), by another process it was passed to (SCM_RIGHTS),
 * by a program that loaded libri2n with dlopen, and by one whose write() an
 * interposer ahead of libri2n takes (LD_PRELOAD), each alternating with
 * write() on the socket's own number (the fast path) for thousands of
 * rounds, every byte checked at the receiver (order_kit.c).
 *
 * Runs in tests/api/run.sh's namespace, as test_api does.
 *
 *   posix_order [FILTER [SKIP]]
 *   posix_order --order-writer FD CTL ACK SEED    (a child writer, order_kit.h)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api_harness.h"
#include "order_kit.h"

#define WATCHDOG_S 60 /* no single test may take longer */
#define ROUNDS 3000   /* per path */

extern char **environ;

static char g_self[4096];

/* A connected pair in o, the bytes going from the connecting end to the accepted one. */
static int make_pair(struct order *o, void *arg)
{
	(void)arg;
	connect_pair(&o->tx, &o->rx);
	return 0;
}

typedef int (*path_fn)(struct order *o, int rounds);

static void run_path(path_fn path, uint32_t seed)
{
	struct order o;
	int c, s;

	connect_pair(&c, &s);
	order_init(&o, c, s, seed, g_self);
	if (path(&o, ROUNDS))
		fail_msg("%s (after %llu bytes)", o.why, (unsigned long long)o.got);
	assert_int_equal(ri2n_close(c), 0);
	assert_int_equal(ri2n_close(s), 0);
}

static void test_order_dup(void **state)
{
	(void)state;
	run_path(order_dup, 11);
}

static void test_order_fdopen(void **state)
{
	(void)state;
	run_path(order_fdopen, 12);
}

static void test_order_stdout(void **state)
{
	(void)state;
	run_path(order_stdout, 13);
}

static void test_order_dupfd(void **state)
{
	(void)state;
	run_path(order_dupfd, 14);
}

static void test_order_dprintf(void **state)
{
	(void)state;
	run_path(order_dprintf, 18);
}

static void test_order_pwritev2(void **state)
{
	(void)state;
	run_path(order_pwritev2, 19);
}

static void test_order_spawn(void **state)
{
	(void)state;
	run_path(order_spawn, 15);
}

static void test_order_vfork(void **state)
{
	(void)state;
	run_path(order_vfork, 16);
}

static void test_order_rights(void **state)
{
	struct order o;

	(void)state;
	order_init(&o, -1, -1, 17, g_self);
	if (order_rights(&o, ROUNDS, make_pair, NULL))
		fail_msg("%s (after %llu bytes)", o.why, (unsigned long long)o.got);
	assert_int_equal(ri2n_close(o.tx), 0);
	assert_int_equal(ri2n_close(o.rx), 0);
}

/*
 * posix_order_dlopen (its own process, not linked with libri2n) loads it
 * with dlopen and alternates libc's write() with ri2n_send().
 */
static void run_program(char **argv, char **envp)
{
	pid_t pid;
	int st, err;

	fflush(stdout);
	err = posix_spawn(&pid, argv[0], NULL, NULL, argv, envp);
	if (err)
		fail_msg("posix_spawn %s: %s", argv[0], strerror(err));
	st = reap(pid, 40000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s: status %#x (its stderr says why)", argv[0], st);
}

static void test_order_dlopen(void **state)
{
	char *argv[] = { (char *)POSIX_ORDER_DLOPEN, (char *)RI2N_LIBRARY, NULL };

	(void)state;
	run_program(argv, environ);
}

/* The same program linked with libri2n, behind an interposer whose write() bypasses it. */
static void test_order_interposer_ahead(void **state)
{
	char *argv[] = { (char *)POSIX_ORDER_AHEAD, (char *)"-", NULL };
	static char pre[4200];
	char *envp[256];
	int n = 0;

	(void)state;
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", POSIX_ORDER_PRELOAD);
	envp[n++] = pre;
	/*
	 * A sanitizer build: its runtime is not first in the list now, which is
	 * meant; leaks are checked in this process, not in that child.
	 */
	envp[n++] = (char *)"ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0";
	for (char **e = environ; *e && n < 255; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0 && strncmp(*e, "ASAN_OPTIONS=", 13) != 0)
			envp[n++] = *e;
	envp[n] = NULL;
	run_program(argv, envp);
}

#define T(f) HARNESS_TEST(f)

int main(int argc, char **argv)
{
	static const struct CMUnitTest tests[] = {
		T(test_order_dup),
		T(test_order_fdopen),
		T(test_order_stdout),
		T(test_order_dupfd),
		T(test_order_dprintf),
		T(test_order_pwritev2),
		T(test_order_spawn),
		T(test_order_vfork),
		T(test_order_rights),
		T(test_order_dlopen),
		T(test_order_interposer_ahead),
	};
	ssize_t n;

	if (argc > 1 && strcmp(argv[1], ORDER_WRITER) == 0)
		return order_writer_main(argc, argv);
	n = readlink("/proc/self/exe", g_self, sizeof(g_self) - 1);
	if (n <= 0) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	g_self[n] = '\0';
	harness_init();
	setenv("RI2N_RAILS", "r1,r2", 0);
	setenv("RI2N_EXIT_LINGER_MS", "5000", 0);
	harness_watchdog("posix_order", WATCHDOG_S);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	if (argc > 2)
		cmocka_set_skip_filter(argv[2]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
