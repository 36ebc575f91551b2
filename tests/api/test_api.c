/*
 * test_api.c - the socket API's semantics, end to end: what include/ri2n.h
 * and docs/API.md promise a program that links -lri2n.
 *
 * Runs inside a network namespace with two rails, r1 198.18.1.1/24 and r2
 * 198.18.2.1/24 (tests/api/run.sh makes it).  Both ends of every connection
 * live in this process or in processes it forks; datagrams between the two
 * local addresses go over loopback, which is all API semantics need.
 *
 * Every wait is bounded (poll with a timeout, connect timeouts, a watchdog per
 * test): a broken contract fails a test, it never hangs the suite.  Times are
 * asserted only as generous upper bounds (two shared cores, sanitizers).
 *
 *   test_api [FILTER [SKIP]]  every test, or those matching FILTER ("*death*")
 *                             and none of SKIP's comma-separated patterns
 *                             ("*slow_acceptor*,*eintr*")
 *
 * The tests, by feature: api_connect.c (connect, accept, bind, backlog),
 * api_calls.c (bad arguments, options), api_stream.c (EOF, death, reset,
 * non-blocking and vector I/O), api_process.c (threads, fork, events),
 * api_fast.c (ri2n_send/ri2n_recv/ri2n_writev/ri2n_readv, the fast path).
 */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "api_harness.h"

#define WATCHDOG_S 100 /* no single test may take longer */

/* The rails are there: the engine starts. */
static int group_setup(void **state)
{
	int fd;

	(void)state;
	fd = ri2n_socket();
	if (fd < 0) {
		print_error("ri2n_socket: %s: are r1 and r2 up (tests/api/run.sh)?\n",
			    strerror(errno));
		return -1;
	}
	ri2n_close(fd);
	return 0;
}

#define T(f) HARNESS_TEST(f)

/* 1 when name matches one of the comma-separated glob patterns in list. */
static int skipped(const char *name, const char *list)
{
	char pat[256];

	while (*list) {
		size_t n = strcspn(list, ",");

		if (n > 0 && n < sizeof(pat)) {
			memcpy(pat, list, n);
			pat[n] = '\0';
			if (fnmatch(pat, name, 0) == 0)
				return 1;
		}
		list += n + (list[n] == ',');
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct CMUnitTest tests[] = {
		/* api_connect.c */
		T(test_blocking_round_trip),
		T(test_connect_rail2_address),
		T(test_bind_one_rail),
		T(test_nonblocking_connect),
		T(test_connect_refused),
		T(test_connect_unreachable_and_timeout),
		T(test_connect_eintr),
		T(test_bind),
		T(test_bind_then_connect),
		T(test_shared_client_port),
		T(test_accept_backlog),
		T(test_accept_backlog_slow_acceptor),
		/* api_calls.c */
		T(test_bad_descriptors),
		T(test_bad_addresses),
		T(test_bad_states),
		T(test_options),
		T(test_options_fixed_after_connect),
		T(test_options_from_environment),
		T(test_key_option),
		T(test_key_from_environment),
		/* api_stream.c */
		T(test_clean_eof),
		T(test_half_close),
		T(test_death_of_acceptor),
		T(test_death_of_connector),
		T(test_silence_of_acceptor),
		T(test_silence_of_connector),
		T(test_reset),
		T(test_linger_reset),
		T(test_orphan_reset),
		T(test_exit_lingers),
		T(test_listener_close),
		T(test_nonblocking_io),
		T(test_vector_io),
		/* api_process.c */
		T(test_threads),
		T(test_fork),
		T(test_events),
		T(test_accept_lowest),
		T(test_sized_structs),
		T(test_stats_copies),
		/* api_fast.c */
		T(test_fast_round_trip),
		T(test_fast_bulk),
		T(test_fast_mixed_paths),
		T(test_fast_concurrent),
		T(test_fast_nonblocking),
		T(test_fast_blocked_receiver),
		T(test_fast_shutdown_under_receiver),
		T(test_fast_close_under_receiver),
		T(test_fast_fork),
		T(test_fast_errors),
		T(test_plain_number_reused),
		T(test_fast_busy_poll),
		T(test_fast_thread_exit),
	};

	harness_init();
	/* the rails of run.sh's namespace, unless the caller chose */
	setenv("RI2N_RAILS", "r1,r2", 0);
	/* a test that leaves a connection owing bytes must not stall exit for 30 s */
	setenv("RI2N_EXIT_LINGER_MS", "5000", 0);
	harness_watchdog("test_api", WATCHDOG_S);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	if (argc > 2) {
		/* cmocka's skip filter takes one pattern: drop the skipped tests here */
		size_t n = 0;

		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
			if (!skipped(tests[i].name, argv[2]))
				tests[n++] = tests[i];
		return _cmocka_run_group_tests("ri2n API semantics", tests, n, group_setup, NULL);
	}
	return cmocka_run_group_tests_name("ri2n API semantics", tests, group_setup, NULL);
}
