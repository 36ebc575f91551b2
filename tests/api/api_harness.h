/*
 * api_harness.h - what the API semantics tests share: addresses of the
 * namespace's rails, bounded waits, a pattern to check every byte with,
 * "flows" that move patterns over several descriptors at once, sockets
 * connected in one call, and forked children that never outlive the test.
 *
 * Helpers that assert (cmocka) run only in the test's main thread; run_flows
 * and the pattern functions are safe in any thread and in forked children.
 */
#ifndef API_HARNESS_H
#define API_HARNESS_H

#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cmocka.h>

#include <ri2n.h>

/* The namespace of run.sh: rails r1 198.18.1.1/24 and r2 198.18.2.1/24. */
#define RAIL1 "198.18.1.1"        /* r1: the address the tests connect to */
#define RAIL2 "198.18.2.1"        /* r2 */
#define NOT_RAIL "198.18.3.1"     /* a benchmarking address no interface has */
#define NO_RAIL_NET "198.18.77.1" /* a subnet no rail is in */
#define SILENT "198.18.1.99"      /* in r1's subnet; it never answers (run.sh) */

#define KIB 1024u
#define MIB (1024u * 1024u)

#define DEAD_PEER_MS 1500 /* the dead-peer timeout of the death and orphan tests */

#define SA(a) ((struct sockaddr *)(a))

/* -1 and errno `err` from a call, with the call's text in the failure message. */
#define expect_fail(call, err)                                                              \
	do {                                                                                \
		errno = 0;                                                                  \
		int rc_ = (call);                                                           \
		int e_ = errno;                                                             \
		if (rc_ != -1 || e_ != (err))                                               \
			fail_msg("%s: got %d errno %d (%s), want -1 errno %d (%s)", #call,  \
				 rc_, e_, strerror(e_), (err), strerror(err));              \
	} while (0)

/* Once, first thing in main: the pattern, SIGPIPE ignored, children's exit. */
void harness_init(void);

/*
 * The watchdog, so that no test hangs its suite: once in main, then every
 * test runs between harness_arm and harness_disarm (HARNESS_TEST).  A test
 * still running `seconds` after it began ends the process with status 124
 * and a line naming `prog`.  With API_TEST_HOLD set in the environment the
 * process stops there instead, for a debugger.
 */
void harness_watchdog(const char *prog, unsigned seconds);
int harness_arm(void **state);
int harness_disarm(void **state);
#define HARNESS_TEST(f) cmocka_unit_test_setup_teardown(f, harness_arm, harness_disarm)

/* ---- time, addresses, descriptors ---- */

uint64_t now_ms(void); /* CLOCK_MONOTONIC, ms */
/* An IPv4 address (NULL: INADDR_ANY) and port. */
struct sockaddr_in sin_of(const char *ip, uint16_t port);
/* "a.b.c.d:port", from one of a few per-thread buffers. */
const char *sin_str(const struct sockaddr_in *a);
/* Polls one descriptor up to ms: its revents, 0 on timeout. */
short wait_fd(int fd, short events, int ms);
void set_nonblock(int fd, int on);
/* SO_ERROR (reading it clears it), and RI2N_SOL options; they assert success. */
int get_so_error(int fd);
/* Whether plain read/write on a ri2n descriptor take the fast path (RI2N_PLAIN_FAST). */
int plain_is_fast(void);
int get_opt(int fd, int name);
void set_opt(int fd, int name, int v);

/* ---- the test kit's pattern (tools/kit/ri2n_kit.h): shifted, lost or repeated runs show ---- */

void pat_fill(uint8_t *b, size_t n, uint32_t seed, uint64_t off);
/* -1 if b holds pattern `seed` from stream offset off, else the first wrong index. */
int64_t pat_check(const uint8_t *b, size_t n, uint32_t seed, uint64_t off);

/* ---- flows: descriptors moving patterns both ways in one poll loop ---- */

struct flow {
	int fd;
	uint32_t tx_seed, rx_seed;
	uint64_t tx_total, rx_total;
	int shut_wr;  /* shutdown(SHUT_WR) once tx_total bytes are written */
	int want_eof; /* a clean end of stream must follow the rx_total bytes */
	uint64_t tx, rx;
	int shut_done, eof;
};

/*
 * Runs the flows until all are done, an error, or timeout_ms; every byte
 * read is checked.  Any thread: returns 0, or -1 with a sentence in why.
 */
int run_flows(struct flow *f, int n, int timeout_ms, char *why, size_t whylen);
/* One flow (30 s at most); a failure fails the test. */
void flow1(int fd, uint32_t tx_seed, uint64_t tx, uint32_t rx_seed, uint64_t rx, int shut_wr,
	   int want_eof);
/* Both ends of a connection at once: a_to_b and b_to_a bytes; shut: then both EOFs. */
void flow2(int a, int b, uint64_t a_to_b, uint64_t b_to_a, int shut, uint32_t seed);

/* ---- sockets ---- */

/* A ri2n socket listening on ip (NULL: every rail), port 0; its port in *port. */
int make_listener(const char *ip, int backlog, uint16_t *port);
/* Accepts within ms (polls first: accept itself would block forever). */
int accept_within(int l, int ms, struct sockaddr_in *peer);
/* A blocking connect to RAIL1:port. */
int connect_to(uint16_t port);
/* A connected pair (client, accepted) through a listener closed again. */
void connect_pair(int *c, int *s);
/*
 * In a forked child: listens on every rail, writes its port (uint16_t) to
 * wfd, accepts one connection within 20 s and returns it; exits with 10-13
 * if any step fails.
 */
int child_accept_one(int wfd);
/* A port nobody listens on. */
uint16_t dead_port(void);

/* ---- children ---- */

/* fork(); the child dies with the test (PR_SET_PDEATHSIG). */
pid_t fork_child(void);
/* Waits up to ms for a child (then SIGKILL and a failure): its wait status. */
int reap(pid_t pid, int ms);

/* ---- the tests ---- */

/* api_connect.c */
void test_blocking_round_trip(void **state);
void test_connect_rail2_address(void **state);
void test_bind_one_rail(void **state);
void test_nonblocking_connect(void **state);
void test_connect_refused(void **state);
void test_connect_unreachable_and_timeout(void **state);
void test_connect_eintr(void **state);
void test_bind(void **state);
void test_bind_then_connect(void **state);
void test_shared_client_port(void **state);
void test_accept_backlog(void **state);
void test_accept_backlog_slow_acceptor(void **state);
/* api_calls.c */
void test_bad_descriptors(void **state);
void test_bad_addresses(void **state);
void test_bad_states(void **state);
void test_options(void **state);
void test_options_fixed_after_connect(void **state);
void test_options_from_environment(void **state);
void test_key_option(void **state);
void test_key_from_environment(void **state);
/* api_stream.c */
void test_clean_eof(void **state);
void test_half_close(void **state);
void test_death_of_acceptor(void **state);
void test_death_of_connector(void **state);
void test_silence_of_acceptor(void **state);
void test_silence_of_connector(void **state);
void test_reset(void **state);
void test_linger_reset(void **state);
void test_orphan_reset(void **state);
void test_exit_lingers(void **state);
void test_listener_close(void **state);
void test_nonblocking_io(void **state);
void test_vector_io(void **state);
/* api_process.c */
void test_threads(void **state);
void test_fork(void **state);
void test_events(void **state);
void test_accept_lowest(void **state);
void test_sized_structs(void **state);
void test_stats_copies(void **state);
/* api_fast.c */
void test_fast_round_trip(void **state);
void test_fast_bulk(void **state);
void test_fast_mixed_paths(void **state);
void test_fast_concurrent(void **state);
void test_fast_nonblocking(void **state);
void test_fast_blocked_receiver(void **state);
void test_fast_shutdown_under_receiver(void **state);
void test_fast_close_under_receiver(void **state);
void test_fast_fork(void **state);
void test_fast_errors(void **state);
void test_plain_number_reused(void **state);
void test_fast_busy_poll(void **state);
void test_fast_thread_exit(void **state);

#endif
